package board

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/fstest"

	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// rangesModel is the obvious model of the applied ranges: one flag per
// offset, with the bound on the number of ranges applied by filling the
// narrowest gap, the lowest of equal ones.
type rangesModel []bool

func (m rangesModel) spans() ranges {
	var r ranges
	for o := range m {
		switch {
		case !m[o]:
		case len(r) > 0 && r[len(r)-1].hi == int64(o)-1:
			r[len(r)-1].hi++
		default:
			r = append(r, span{int64(o), int64(o)})
		}
	}
	return r
}

func (m rangesModel) cover(a, b int64) string {
	n := 0
	for o := a; o <= b; o++ {
		if m[o] {
			n++
		}
	}
	switch {
	case n == int(b-a+1):
		return "all"
	case n == 0:
		return "none"
	}
	return "some"
}

// add marks [a, b] and returns how many gaps it closed.
func (m rangesModel) add(a, b int64) int {
	for o := a; o <= b; o++ {
		m[o] = true
	}
	closed := 0
	for r := m.spans(); len(r) > maxRanges; r = m.spans() {
		at := 0
		for k := range len(r) - 1 {
			if r[k+1].lo-r[k].hi < r[at+1].lo-r[at].hi {
				at = k
			}
		}
		for o := r[at].hi + 1; o < r[at+1].lo; o++ {
			m[o] = true
		}
		closed++
	}
	return closed
}

// rangesDriver runs the apply script's range functions (lua/ranges.lua) on
// ARGV: the stored ranges, the range to add, and answers {new ranges, gaps
// closed, cover of the range before adding it}.
const rangesDriver = `--! include consts.lua
--! include ranges.lua
local r = rparse_ranges(ARGV[1] ~= '' and ARGV[1] or nil)
local a, b = tonumber(ARGV[2]), tonumber(ARGV[3])
local c = rcover(r, a, b)
local n, closed = radd(r, a, b)
return {rformat_ranges(n), closed, c}
`

// TestRangesAgainstModel adds random ranges, short and long, overlapping,
// adjacent and apart, to the script's applied ranges and to the model, far
// past the bound on their number, and compares after every step; the Go
// parser must read back what the script wrote.
func TestRangesAgainstModel(t *testing.T) {
	fsys := fstest.MapFS{"driver.lua": {Data: []byte(rangesDriver)}}
	for _, name := range []string{"consts.lua", "ranges.lua"} {
		b, err := luaFiles.ReadFile("lua/" + name)
		if err != nil {
			t.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: b}
	}
	driver, err := redisscript.Parse(fsys, "driver.lua")
	if err != nil {
		t.Fatal(err)
	}
	rdb := testenv.StartRedis(t).Client()
	ctx := context.Background()
	const size = 1200
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			m := make(rangesModel, size)
			stored := ""
			if seed == 3 {
				// Ranges stored before the first call.
				stored = "0-40"
				m.add(0, 40)
			}
			closedTotal := 0
			for step := range 400 {
				a := rng.Int64N(size - 20)
				b := a + rng.Int64N(3)
				if rng.IntN(10) == 0 {
					b = a + rng.Int64N(20)
				}
				wantCover := m.cover(a, b)
				wantClosed := m.add(a, b)
				closedTotal += wantClosed
				v, err := rdb.Eval(ctx, driver.Source(), nil, stored, a, b).Slice()
				if err != nil {
					t.Fatal(err)
				}
				stored = v[0].(string)
				got, err := parseRanges(stored)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				want := m.spans()
				if got.String() != want.String() || stored != want.String() || v[1].(int64) != int64(wantClosed) || v[2].(string) != wantCover {
					t.Fatalf("step %d, add %d-%d:\n script %s closed %d cover %s\n model  %s closed %d cover %s",
						step, a, b, stored, v[1], v[2], want, wantClosed, wantCover)
				}
				if len(got) > maxRanges {
					t.Fatalf("step %d: %d ranges", step, len(got))
				}
				for range 5 {
					o := rng.Int64N(size)
					if got.contains(o) != m[o] {
						t.Fatalf("step %d: contains(%d) = %v", step, o, !m[o])
					}
				}
			}
			if closedTotal == 0 {
				t.Error("the bound on ranges was never reached")
			}
		})
	}
}

func TestParseRanges(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "", want: ""},
		{in: "17", bad: true}, // a bare number is not a range
		{in: "3-9", want: "3-9"},
		{in: "0-4,6-6,100-200", want: "0-4,6-6,100-200"},
		{in: "0-4,5-6", bad: true}, // adjacent: the script merges them
		{in: "5-4", bad: true},
		{in: "4-9,1-2", bad: true},
		{in: "x", bad: true},
		{in: "1-", bad: true},
	} {
		r, err := parseRanges(tc.in)
		if (err != nil) != tc.bad || err == nil && r.String() != tc.want {
			t.Errorf("parseRanges(%q) = %v, %v; want %q (bad %v)", tc.in, r, err, tc.want, tc.bad)
		}
	}
}
