package codec

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestNewLayoutErrors(t *testing.T) {
	tests := []struct {
		name   string
		fields []Field
		want   string // substring of the error
	}{
		{"no fields", nil, "no fields"},
		{"zero bits", []Field{{Name: "a", Bits: 0}}, "a has 0 bits"},
		{"zero bits later", []Field{{Name: "a", Bits: 3}, {Name: "b"}}, "b has 0 bits"},
		{"empty name", []Field{{Name: "", Bits: 3}}, "field 0 has no name"},
		{"duplicate name", []Field{{Name: "a", Bits: 3}, {Name: "b", Bits: 3}, {Name: "a", Bits: 3}}, "name a is used twice"},
		{"unknown direction", []Field{{Name: "a", Bits: 3, Dir: 2}}, "unknown direction 2"},
		{"54 bits", []Field{{Name: "a", Bits: 50}, {Name: "b", Bits: 4}}, "needs 54 bits, more than the 53"},
		{"one wide field", []Field{{Name: "a", Bits: 64}}, "needs 64 bits, more than the 53"},
		{"seed 001", []Field{{Name: "score", Bits: 23}, {Name: "time", Bits: 40}}, "needs 63 bits, more than the 53"},
		{"widths overflow uint8", []Field{{Name: "a", Bits: 200}, {Name: "b", Bits: 100}}, "needs 300 bits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := NewLayout(tt.fields...)
			if err == nil {
				t.Fatalf("NewLayout = %v, want error containing %q", l, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "codec: ") {
				t.Fatalf("NewLayout error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestMustLayoutPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustLayout with 54 bits did not panic")
		}
	}()
	MustLayout(Field{Name: "a", Bits: 54})
}

func TestLayoutPlacement(t *testing.T) {
	l := MustLayout(
		Field{Name: "a", Bits: 1},
		Field{Name: "b", Bits: 10, Dir: LowerFirst},
		Field{Name: "c", Bits: 5},
	)
	want := []FieldInfo{
		{Name: "a", Bits: 1, Dir: HigherFirst, Shift: 15, Max: 1},
		{Name: "b", Bits: 10, Dir: LowerFirst, Shift: 5, Max: 1023},
		{Name: "c", Bits: 5, Dir: HigherFirst, Shift: 0, Max: 31},
	}
	got := l.Fields()
	if len(got) != len(want) {
		t.Fatalf("Fields = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	got[0].Name = "changed"
	if l.Fields()[0].Name != "a" {
		t.Error("Fields returned the layout's own slice")
	}
	if l.Bits() != 16 {
		t.Errorf("Bits = %d, want 16", l.Bits())
	}
	if s, want := l.String(), "a:1 b:10(lower-first) c:5 (16 bits)"; s != want {
		t.Errorf("String = %q, want %q", s, want)
	}
	// b is stored inverted: the smallest b gives the largest score.
	for _, tc := range []struct {
		vals []uint64
		want float64
	}{
		{[]uint64{0, 1023, 0}, 0},
		{[]uint64{0, 0, 0}, 1023 << 5},
		{[]uint64{1, 1023, 31}, 1<<15 | 31},
		{[]uint64{1, 0, 31}, 1<<16 - 1},
		{[]uint64{0, 1022, 7}, 1<<5 | 7},
	} {
		got, err := l.Encode(tc.vals...)
		if err != nil || got != tc.want {
			t.Errorf("Encode(%v) = %v, %v; want %v", tc.vals, got, err, tc.want)
		}
	}
}

func TestLayoutEncodeErrors(t *testing.T) {
	l := MustLayout(
		Field{Name: "flag", Bits: 1},
		Field{Name: "total", Bits: 20, Dir: LowerFirst},
		Field{Name: "rest", Bits: 32},
	)
	tests := []struct {
		name      string
		vals      []uint64
		wantRange *RangeError // nil: a count error
	}{
		{"no values", nil, nil},
		{"too few", []uint64{1, 2}, nil},
		{"too many", []uint64{1, 2, 3, 4}, nil},
		{"flag max+1", []uint64{2, 0, 0}, &RangeError{Field: "flag", Value: 2, Max: 1}},
		{"total max+1", []uint64{0, 1 << 20, 0}, &RangeError{Field: "total", Value: 1 << 20, Max: 1<<20 - 1}},
		{"rest max+1", []uint64{0, 0, 1 << 32}, &RangeError{Field: "rest", Value: 1 << 32, Max: 1<<32 - 1}},
		{"rest huge", []uint64{0, 0, math.MaxUint64}, &RangeError{Field: "rest", Value: math.MaxUint64, Max: 1<<32 - 1}},
		{"first bad field wins", []uint64{5, 1 << 21, 0}, &RangeError{Field: "flag", Value: 5, Max: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			score, err := l.Encode(tt.vals...)
			if err == nil {
				t.Fatalf("Encode(%v) = %v, want error", tt.vals, score)
			}
			var re *RangeError
			if tt.wantRange == nil {
				if errors.As(err, &re) || !strings.Contains(err.Error(), "3 fields") {
					t.Fatalf("Encode(%v) error %v, want a count error", tt.vals, err)
				}
				return
			}
			if !errors.As(err, &re) || *re != *tt.wantRange {
				t.Fatalf("Encode(%v) error %#v, want %#v", tt.vals, err, tt.wantRange)
			}
		})
	}
	// Every field at its max encodes.
	if _, err := l.Encode(1, 1<<20-1, 1<<32-1); err != nil {
		t.Fatalf("Encode at max: %v", err)
	}
	re := &RangeError{Field: "volume", Value: 1000, Max: 999}
	if got, want := re.Error(), "codec: field volume: value 1000 out of range 0..999"; got != want {
		t.Errorf("RangeError.Error = %q, want %q", got, want)
	}
}

func TestLayoutDecodeErrors(t *testing.T) {
	l := MustLayout(Field{Name: "a", Bits: 3}, Field{Name: "b", Bits: 7})
	full := MustLayout(Field{Name: "n", Bits: 53})
	tests := []struct {
		name  string
		l     *Layout
		score float64
		want  string
	}{
		{"NaN", l, math.NaN(), "not a non-negative number"},
		{"negative", l, -1, "not a non-negative number"},
		{"tiny negative", l, -math.SmallestNonzeroFloat64, "not a non-negative number"},
		{"-Inf", l, math.Inf(-1), "not a non-negative number"},
		{"+Inf", l, math.Inf(1), "not below 2^10"},
		{"2^bits", l, 1 << 10, "not below 2^10"},
		{"2^53 in a full layout", full, 1 << 53, "not below 2^53"},
		{"2^60", full, 1 << 60, "not below 2^53"},
		{"fraction", l, 1.5, "not an integer"},
		{"tiny fraction", l, math.SmallestNonzeroFloat64, "not an integer"},
		{"just below an integer", l, math.Nextafter(1000, 0), "not an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []uint64{42}
			got, err := tt.l.Decode(tt.score, dst)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode(%v) = %v, %v; want error containing %q", tt.score, got, err, tt.want)
			}
			if len(got) != 1 || got[0] != 42 {
				t.Fatalf("Decode(%v) on error changed dst to %v", tt.score, got)
			}
		})
	}
	// The edges of the valid range decode.
	for _, s := range []float64{0, math.Copysign(0, -1), 1<<10 - 1} {
		if _, err := l.Decode(s, nil); err != nil {
			t.Errorf("Decode(%v): %v", s, err)
		}
	}
	if v, err := full.Decode(1<<53-1, nil); err != nil || v[0] != 1<<53-1 {
		t.Errorf("Decode(2^53-1) = %v, %v", v, err)
	}
}

func TestDecodeAppends(t *testing.T) {
	l := MustLayout(Field{Name: "a", Bits: 4}, Field{Name: "b", Bits: 4, Dir: LowerFirst})
	s, err := l.Encode(3, 5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Decode(s, []uint64{9})
	if err != nil || len(got) != 3 || got[0] != 9 || got[1] != 3 || got[2] != 5 {
		t.Fatalf("Decode appended %v, %v; want [9 3 5]", got, err)
	}
}

func TestFirstReached(t *testing.T) {
	for _, bad := range []uint8{0, 53, 54, 255} {
		if l, err := NewFirstReached(bad); err == nil {
			t.Errorf("NewFirstReached(%d) = %v, want error", bad, l)
		}
	}
	l, err := NewFirstReached(23)
	if err != nil {
		t.Fatal(err)
	}
	if s, want := l.String(), "total:23 reached:30(lower-first) (53 bits)"; s != want {
		t.Errorf("String = %q, want %q", s, want)
	}
	enc := func(total, reached uint64) float64 {
		t.Helper()
		s, err := l.Encode(total, reached)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Among equal totals the earlier one ranks higher; a larger total beats
	// any time.
	if !(enc(100, 5) > enc(100, 6)) {
		t.Error("earlier reached time does not rank higher")
	}
	if !(enc(101, 1<<30-1) > enc(100, 0)) {
		t.Error("larger total does not rank higher")
	}
	for _, bits := range []uint8{1, 23, 52} {
		l, err := NewFirstReached(bits)
		if err != nil || l.Bits() != MaxBits {
			t.Errorf("NewFirstReached(%d) = %v, %v; want a 53-bit layout", bits, l, err)
		}
	}
}

// compareTuples compares a and b as ranks: +1 when a ranks higher. Fields
// compare lexicographically, most significant first; LowerFirst fields
// compare inverted.
func compareTuples(fields []FieldInfo, a, b []uint64) int {
	for i, f := range fields {
		c := cmp.Compare(a[i], b[i])
		if f.Dir == LowerFirst {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// randomLayout returns a layout of 1..12 fields of random widths summing to
// at most MaxBits (often exactly MaxBits), with random directions.
func randomLayout(r *rand.Rand) *Layout {
	n := 1 + r.IntN(12)
	budget := MaxBits
	if r.IntN(3) == 0 {
		budget = n + r.IntN(MaxBits-n+1)
	}
	fields := make([]Field, n)
	for i := range fields {
		left := n - i - 1 // fields still to place, one bit each at least
		bits := 1 + r.IntN(budget-left)
		if i == n-1 {
			bits = budget // the last field takes what remains
		}
		budget -= bits
		fields[i] = Field{Name: string(rune('a' + i)), Bits: uint8(bits), Dir: Direction(r.IntN(2))}
	}
	return MustLayout(fields...)
}

// randomValue returns a value for f: an edge value (0, 1, max-1, max) a
// third of the time, else uniform in 0..max.
func randomValue(r *rand.Rand, f FieldInfo) uint64 {
	if r.IntN(3) == 0 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return min(1, f.Max)
		case 2:
			return f.Max - min(1, f.Max)
		default:
			return f.Max
		}
	}
	return r.Uint64N(f.Max + 1)
}

// randomTuple fills dst with random values for l's fields.
func randomTuple(r *rand.Rand, fields []FieldInfo, dst []uint64) []uint64 {
	dst = dst[:0]
	for _, f := range fields {
		dst = append(dst, randomValue(r, f))
	}
	return dst
}

// neighbour returns a copy of a that shares a random prefix with a and
// differs from it by one step (or by a random value) in the next field, so
// that the lower fields decide the comparison.
func neighbour(r *rand.Rand, fields []FieldInfo, a []uint64) []uint64 {
	b := append([]uint64(nil), a...)
	i := r.IntN(len(fields))
	switch f := fields[i]; {
	case r.IntN(2) == 0 && b[i] < f.Max:
		b[i]++
	case r.IntN(2) == 0 && b[i] > 0:
		b[i]--
	default:
		b[i] = randomValue(r, f)
	}
	for j := i + 1; j < len(fields); j++ {
		b[j] = randomValue(r, fields[j])
	}
	return b
}

// checkOrder encodes a and b and requires the order of their scores to equal
// the order of the tuples, and both to decode back to themselves.
func checkOrder(t *testing.T, l *Layout, a, b []uint64) {
	t.Helper()
	fields := l.Fields()
	sa, err := l.Encode(a...)
	if err != nil {
		t.Fatalf("%s: Encode(%v): %v", l, a, err)
	}
	sb, err := l.Encode(b...)
	if err != nil {
		t.Fatalf("%s: Encode(%v): %v", l, b, err)
	}
	if got, want := cmp.Compare(sa, sb), compareTuples(fields, a, b); got != want {
		t.Fatalf("%s: compare(Encode(%v)=%v, Encode(%v)=%v) = %d, tuple order %d", l, a, sa, b, sb, got, want)
	}
	if sa != math.Trunc(sa) || sa < 0 || sa >= 1<<MaxBits {
		t.Fatalf("%s: Encode(%v) = %v, not an integer in [0, 2^53)", l, a, sa)
	}
	for _, p := range []struct {
		s float64
		v []uint64
	}{{sa, a}, {sb, b}} {
		got, err := l.Decode(p.s, nil)
		if err != nil || compareTuples(fields, got, p.v) != 0 {
			t.Fatalf("%s: Decode(Encode(%v)) = %v, %v", l, p.v, got, err)
		}
	}
}

func TestLayoutOrderProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(20250101, 3))
	layouts := []*Layout{
		MustLayout(Field{Name: "n", Bits: 53}),
		MustLayout(Field{Name: "n", Bits: 53, Dir: LowerFirst}),
		NewMeeting(DefaultEpoch).Layout(),
		MustLayout(Field{Name: "total", Bits: 23}, Field{Name: "reached", Bits: 30, Dir: LowerFirst}),
	}
	for range 300 {
		layouts = append(layouts, randomLayout(r))
	}
	pairs := 0
	for _, l := range layouts {
		fields := l.Fields()
		if l.Bits() > MaxBits {
			t.Fatalf("random layout %s has more than %d bits", l, MaxBits)
		}
		// Every combination of edge values against its neighbours.
		for _, f := range fields {
			for _, v := range []uint64{0, f.Max - min(1, f.Max), f.Max} {
				a := randomTuple(r, fields, nil)
				for i := range fields {
					if fields[i].Name == f.Name {
						a[i] = v
					}
				}
				checkOrder(t, l, a, neighbour(r, fields, a))
				checkOrder(t, l, a, a)
				pairs += 2
			}
		}
		for range 200 {
			a := randomTuple(r, fields, nil)
			checkOrder(t, l, a, randomTuple(r, fields, nil))
			checkOrder(t, l, a, neighbour(r, fields, a))
			pairs += 2
		}
	}
	// All fields at 0, at max and at max-1 together.
	for _, l := range layouts {
		fields := l.Fields()
		var zero, hi, lo []uint64
		for _, f := range fields {
			zero = append(zero, 0)
			hi = append(hi, f.Max)
			lo = append(lo, f.Max-min(1, f.Max))
		}
		checkOrder(t, l, zero, hi)
		checkOrder(t, l, hi, lo)
		checkOrder(t, l, lo, zero)
		pairs += 3
	}
	t.Logf("%d layouts, %d pairs", len(layouts), pairs)
}

func TestEncodeDecodeDoNotAllocate(t *testing.T) {
	l := MustLayout(
		Field{Name: "a", Bits: 1},
		Field{Name: "b", Bits: 10, Dir: LowerFirst},
		Field{Name: "c", Bits: 42},
	)
	m := NewMeeting(DefaultEpoch)
	s := MemberScore{Audio: 1, Volume: 512, Video: 1, Role: RoleHost, TS: DefaultEpoch.UnixMilli() + 123456}
	score, err := m.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]uint64, 0, 3)
	var sink float64
	var ms MemberScore
	for name, f := range map[string]func(){
		"Layout.Encode":  func() { sink, _ = l.Encode(1, 2, 3) },
		"Layout.Decode":  func() { dst, _ = l.Decode(12345, dst[:0]) },
		"Meeting.Encode": func() { sink, _ = m.Encode(s) },
		"Meeting.Decode": func() { ms, _ = m.Decode(score) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %v times per call, want 0", name, n)
		}
	}
	_, _ = sink, ms
}
