package stability

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMergeTable(t *testing.T) {
	tests := []struct {
		name       string
		prev, next []string
		n          int
		want       []string
	}{
		{"first list", nil, []string{"a", "b", "c"}, 7, []string{"a", "b", "c"}},
		{"same set reordered keeps slots", []string{"a", "b", "c"}, []string{"c", "a", "b"}, 7, []string{"a", "b", "c"}},
		{"departed slot filled by newcomer", []string{"a", "b", "c"}, []string{"c", "d", "a"}, 7, []string{"a", "d", "c"}},
		// Seed 003's example shape: two leave, two arrive; arrivals fill the holes in B's order.
		{"two holes filled in order", []string{"a", "b", "c", "d"}, []string{"e", "d", "f", "a"}, 4, []string{"a", "e", "f", "d"}},
		{"list grows at the end", []string{"a", "b"}, []string{"c", "b", "a"}, 7, []string{"a", "b", "c"}},
		{"list shrinks, later member moves down", []string{"a", "b", "c"}, []string{"c"}, 7, []string{"c"}},
		{"only top n of next count", []string{"a", "b"}, []string{"x", "a", "y", "b"}, 2, []string{"a", "x"}},
		{"n smaller than prev", []string{"a", "b", "c", "d"}, []string{"d", "c", "b", "a"}, 2, []string{"c", "d"}},
		{"empty next", []string{"a"}, nil, 7, []string{}},
		{"n zero", []string{"a"}, []string{"a"}, 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Merge(nil, tt.prev, tt.next, tt.n)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Merge(%v, %v, %d) = %v, want %v", tt.prev, tt.next, tt.n, got, tt.want)
			}
		})
	}
}

// randomList draws up to max distinct members from a small universe so that
// prev and next overlap often.
func randomList(r *rand.Rand, max int) []string {
	perm := r.Perm(12)
	k := r.IntN(max + 1)
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("u%d", perm[i])
	}
	return out
}

func TestMergeProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 7))
	for iter := 0; iter < 20000; iter++ {
		n := 1 + r.IntN(9)
		prev, next := randomList(r, 10), randomList(r, 10)
		got := Merge(nil, prev, next, n)

		top := next[:min(n, len(next))]
		// The set equals the true top-n.
		if !sameSet(got, top) {
			t.Fatalf("set(Merge(%v, %v, %d)) = %v, want set %v", prev, next, n, got, top)
		}
		// Members in both keep their slot when it still exists.
		for i, m := range prev {
			if i < len(got) && slices.Contains(top, m) && got[i] != m {
				t.Fatalf("Merge(%v, %v, %d) = %v: %s moved from slot %d", prev, next, n, got, m, i)
			}
		}
		// Pure: same input, same output, and the input is not modified.
		p2, n2 := slices.Clone(prev), slices.Clone(next)
		if again := Merge(nil, p2, n2, n); !slices.Equal(again, got) || !slices.Equal(p2, prev) || !slices.Equal(n2, next) {
			t.Fatalf("Merge is not pure for %v, %v, %d", prev, next, n)
		}
		// A stable list whose set is unchanged stays as it is.
		if again := Merge(nil, got, next, n); !slices.Equal(again, got) {
			t.Fatalf("Merge(%v, %v, %d) = %v, want unchanged %v", got, next, n, again, got)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, m := range a {
		if !slices.Contains(b, m) {
			return false
		}
	}
	return true
}

func BenchmarkMerge(b *testing.B) {
	prev := []string{"a", "b", "c", "d", "e", "f", "g"}
	next := []string{"g", "x", "a", "c", "y", "e", "b", "z"}
	dst := make([]string, 0, DefaultN)
	b.ReportAllocs()
	for b.Loop() {
		dst = Merge(dst, prev, next, DefaultN)
	}
}
