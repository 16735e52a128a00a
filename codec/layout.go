package codec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxBits is the most bits a Layout may use: an IEEE-754 double holds every
// integer in [0, 2^53] exactly, and Redis stores sorted-set scores as doubles.
const MaxBits = 53

// Direction says which end of a field's range ranks higher.
type Direction uint8

const (
	// HigherFirst ranks larger values higher (a louder speaker, a larger total).
	HigherFirst Direction = iota
	// LowerFirst ranks smaller values higher (an earlier time). The field is
	// stored inverted, as Max - v, so that a larger score still ranks higher.
	LowerFirst
)

// String returns "higher-first" or "lower-first".
func (d Direction) String() string {
	switch d {
	case HigherFirst:
		return "higher-first"
	case LowerFirst:
		return "lower-first"
	}
	return "Direction(" + strconv.Itoa(int(d)) + ")"
}

// Field describes one field of a Layout: its name, its width in bits and
// which end of its range ranks higher.
type Field struct {
	Name string
	Bits uint8
	Dir  Direction
}

// FieldInfo is a placed field: Shift is its bit offset from the least
// significant bit of the score, and Max = 1<<Bits - 1 is the largest value it
// holds.
type FieldInfo struct {
	Name  string
	Bits  uint8
	Dir   Direction
	Shift uint8
	Max   uint64
}

// RangeError reports a value that does not fit its field. Encoders return it
// instead of wrapping the value around, which would silently reorder scores.
type RangeError struct {
	Field string // the field's name
	Value uint64 // the value given
	Max   uint64 // the largest value the field accepts
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("codec: field %s: value %d out of range 0..%d", e.Field, e.Value, e.Max)
}

// Layout packs a tuple of unsigned fields into one float64 score whose order
// equals the lexicographic order of the tuples, most significant field first,
// with LowerFirst fields compared inverted. Scores are integers below
// 2^Bits() <= 2^53, so they are exact in a double and survive Redis unchanged.
//
// A Layout is immutable after NewLayout and safe for concurrent use.
type Layout struct {
	fields []FieldInfo
	bits   int
}

// NewLayout places fields, most significant first. It returns an error when
// there are no fields, when a field has zero bits, an empty or duplicate name
// or an unknown Direction, or when the fields need more than MaxBits bits in
// all. Call it at start-up so that a layout that does not fit stops the
// process before any score is written.
func NewLayout(fields ...Field) (*Layout, error) {
	if len(fields) == 0 {
		return nil, errors.New("codec: layout has no fields")
	}
	total := 0
	for i, f := range fields {
		switch {
		case f.Name == "":
			return nil, fmt.Errorf("codec: layout field %d has no name", i)
		case f.Bits == 0:
			return nil, fmt.Errorf("codec: layout field %s has 0 bits", f.Name)
		case f.Dir != HigherFirst && f.Dir != LowerFirst:
			return nil, fmt.Errorf("codec: layout field %s has unknown direction %d", f.Name, f.Dir)
		}
		for _, g := range fields[:i] {
			if g.Name == f.Name {
				return nil, fmt.Errorf("codec: layout field name %s is used twice", f.Name)
			}
		}
		total += int(f.Bits)
	}
	if total > MaxBits {
		return nil, fmt.Errorf("codec: layout needs %d bits, more than the %d a float64 score holds exactly", total, MaxBits)
	}
	l := &Layout{fields: make([]FieldInfo, len(fields)), bits: total}
	shift := total
	for i, f := range fields {
		shift -= int(f.Bits)
		l.fields[i] = FieldInfo{
			Name:  f.Name,
			Bits:  f.Bits,
			Dir:   f.Dir,
			Shift: uint8(shift),
			Max:   1<<f.Bits - 1,
		}
	}
	return l, nil
}

// MustLayout is like NewLayout but panics on error. It is meant for layouts
// fixed in the source, such as package-level presets and tests.
func MustLayout(fields ...Field) *Layout {
	l, err := NewLayout(fields...)
	if err != nil {
		panic(err)
	}
	return l
}

// Encode packs vals, one per field in layout order, into a score. It returns
// an error when the number of values differs from the number of fields, and a
// *RangeError when a value exceeds its field's Max; it never wraps. Encode
// does not allocate unless it fails.
func (l *Layout) Encode(vals ...uint64) (float64, error) {
	if len(vals) != len(l.fields) {
		return 0, fmt.Errorf("codec: layout has %d fields, got %d values", len(l.fields), len(vals))
	}
	var x uint64
	for i := range l.fields {
		f := &l.fields[i]
		v := vals[i]
		if v > f.Max {
			return 0, &RangeError{Field: f.Name, Value: v, Max: f.Max}
		}
		if f.Dir == LowerFirst {
			v = f.Max - v
		}
		x |= v << f.Shift
	}
	// x < 2^53, so the conversion is exact.
	return float64(x), nil
}

// Decode appends the field values held in score to dst, in layout order, and
// returns the extended slice. LowerFirst fields are un-inverted, so
// Decode(Encode(vals)) == vals. It returns an error when score is NaN,
// negative, not an integer, or not below 2^Bits(), none of which Encode
// produces. Decode does not allocate when dst has room for every field.
func (l *Layout) Decode(score float64, dst []uint64) ([]uint64, error) {
	x, err := l.bitsOf(score)
	if err != nil {
		return dst, err
	}
	for i := range l.fields {
		dst = append(dst, l.field(x, i))
	}
	return dst, nil
}

// bitsOf returns score as the integer it holds, or an error when score is
// NaN, negative, not an integer, or not below 2^l.bits.
func (l *Layout) bitsOf(score float64) (uint64, error) {
	// The negated comparison is also true for NaN.
	if !(score >= 0) || score >= float64(uint64(1)<<l.bits) {
		return 0, l.scoreError(score)
	}
	x := uint64(score)
	if float64(x) != score {
		return 0, l.scoreError(score)
	}
	return x, nil
}

// field returns field i of the packed score x, un-inverted.
func (l *Layout) field(x uint64, i int) uint64 {
	f := &l.fields[i]
	v := x >> f.Shift & f.Max
	if f.Dir == LowerFirst {
		v = f.Max - v
	}
	return v
}

// scoreError says why score is not a score of l. It is kept out of bitsOf so
// that the valid path stays small.
//
//go:noinline
func (l *Layout) scoreError(score float64) error {
	switch {
	case !(score >= 0):
		return fmt.Errorf("codec: decode score %v: not a non-negative number", score)
	case score >= float64(uint64(1)<<l.bits):
		return fmt.Errorf("codec: decode score %v: not below 2^%d", score, l.bits)
	}
	return fmt.Errorf("codec: decode score %v: not an integer", score)
}

// Fields returns a copy of the placed fields, most significant first.
func (l *Layout) Fields() []FieldInfo {
	return append([]FieldInfo(nil), l.fields...)
}

// Bits returns the number of bits the layout uses, at most MaxBits.
func (l *Layout) Bits() int { return l.bits }

// String describes the layout as name:bits pairs, most significant first,
// marking LowerFirst fields, for example
// "audio:1 volume:10 video:1 role:3 time:38 (53 bits)" or
// "total:23 reached:30(lower-first) (53 bits)".
func (l *Layout) String() string {
	var b strings.Builder
	for _, f := range l.fields {
		b.WriteString(f.Name)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(int(f.Bits)))
		if f.Dir != HigherFirst {
			b.WriteString("(" + f.Dir.String() + ")")
		}
		b.WriteByte(' ')
	}
	b.WriteString("(" + strconv.Itoa(l.bits) + " bits)")
	return b.String()
}
