package boarddef

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rostrumhq/rostrum/codec"
)

// Corrections and decimals (docs/DESIGN.md §8 "Corrections" and "Decimal
// values").
//
// A board with allow-negative counts negative values (refunds,
// penalties); without it a negative value sends its record to the DLQ.
// A member's sum is kept exactly; the total it shows and ranks with is
// max(sum, floor) (floor 0 by default, none: no floor). Clamping at read
// rather than at every step keeps the sum independent of the order in
// which increments and decrements arrive, so folding, redelivery and
// replays in any order agree, and a window can subtract an expired slice
// exactly. A remove event takes a member off a board (RemoveRecord).
//
// A board of scale 10, 100 or 1000 stores every value as an integer
// number of 1/scale units: 12.5 on a scale-10 board is 125. Reads format
// units back as exact decimal text (FormatUnits).

// compileCorrections validates allow-negative, floor and scale.
func (b *Board) compileCorrections(c *Config) error {
	b.scale, b.places = 1, 0
	switch c.Scale {
	case 0, 1:
	case 10:
		b.scale, b.places = 10, 1
	case 100:
		b.scale, b.places = 100, 2
	case 1000:
		b.scale, b.places = 1000, 3
	default:
		return fieldErr("scale", "%d must be 1, 10, 100 or 1000", c.Scale)
	}
	if b.scale > 1 && b.one {
		return fieldErr("scale", "a board that counts events (value: one) has no decimals")
	}
	if c.AllowNegative {
		if b.op != Incr {
			return fieldErr("allow-negative", "only incr boards add negative values (op is %s)", b.op)
		}
		b.allowNeg = true
	}
	switch f := strings.TrimSpace(c.Floor); f {
	case "":
	case "none":
		if !b.allowNeg {
			return fieldErr("floor", "a board without allow-negative never goes below 0")
		}
		b.noFloor = true
	default:
		if !b.allowNeg {
			return fieldErr("floor", "a board without allow-negative never goes below 0")
		}
		v, err := b.ParseUnits(f)
		if err != nil {
			return fieldErr("floor", "%q must be none or a number (%v)", f, err)
		}
		if v > 0 {
			return fieldErr("floor", "%s must not be above 0", f)
		}
		b.floor = v
	}
	return nil
}

// AllowNegative reports whether the board counts negative values.
func (b *Board) AllowNegative() bool { return b.allowNeg }

// Floor returns the least total a member shows and ranks with, in units of
// 1/Scale, and false when the board has no floor (floor: none).
func (b *Board) Floor() (int64, bool) { return b.floor, !b.noFloor }

// CountsEvents reports whether the board counts events (value: one)
// rather than summing their values.
func (b *Board) CountsEvents() bool { return b.one }

// Scale returns how many units make 1 on the board: 1, 10, 100 or 1000.
func (b *Board) Scale() int64 { return b.scale }

// Shown returns the total a member with sum shows and ranks with:
// max(sum, floor), or sum on a board without a floor.
func (b *Board) Shown(sum int64) int64 {
	if !b.noFloor && sum < b.floor {
		return b.floor
	}
	return sum
}

// FormatUnits writes a number of 1/Scale units as exact decimal text
// without trailing zeros: 125 on a scale-10 board is "12.5", 120 is "12",
// -5 is "-0.5".
func (b *Board) FormatUnits(v int64) string {
	if b.scale == 1 {
		return strconv.FormatInt(v, 10)
	}
	neg := v < 0
	u := uint64(v)
	if neg {
		u = uint64(-v)
	}
	s := strconv.FormatUint(u/uint64(b.scale), 10)
	if r := u % uint64(b.scale); r != 0 {
		f := strconv.FormatUint(r+uint64(b.scale), 10)[1:] // zero-padded to the places
		s += "." + strings.TrimRight(f, "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// ParseUnits reads decimal text ("12.5", "-3", "0.25") as units of
// 1/Scale; it fails when the text is finer than the scale, has an
// exponent, or is out of range.
func (b *Board) ParseUnits(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	ip, fp, _ := strings.Cut(digits, ".")
	fp = strings.TrimRight(fp, "0")
	if ip == "" || len(fp) > int(b.places) || strings.ContainsFunc(ip+fp, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, fmt.Errorf("not a number with at most %d decimal places", b.places)
	}
	n, err := strconv.ParseUint(ip+fp+strings.Repeat("0", int(b.places)-len(fp)), 10, 64)
	if err != nil || n > codec.MaxAmount {
		return 0, fmt.Errorf("out of range")
	}
	if neg {
		return -int64(n), nil
	}
	return int64(n), nil
}

// Units returns the value ev adds (incr) or sets (best, set) in units of
// 1/Scale, or an error saying why the board refuses it: finer than the
// scale, negative on a board without allow-negative, or out of range once
// scaled.
func (b *Board) Units(ev *codec.Event) (int64, error) {
	v, places := ev.Value, ev.Decimals
	for places > 0 && v%10 == 0 {
		v, places = v/10, places-1
	}
	if b.one {
		v, places = 1, 0
		if ev.Value < 0 {
			v = -1
		}
	}
	if v < 0 && !b.allowNeg {
		return 0, fmt.Errorf("value: %s is negative and the board does not allow negative values (allow-negative: true)",
			decimalText(ev.Value, ev.Decimals))
	}
	if places > b.places {
		return 0, fmt.Errorf("value: %s is finer than the board's scale %d (at most %d decimal places)",
			decimalText(ev.Value, ev.Decimals), b.scale, b.places)
	}
	for range b.places - places {
		v *= 10
	}
	if v > b.maxTotal || -v > b.maxTotal {
		return 0, fmt.Errorf("value: %s is beyond the board's max-total %s",
			decimalText(ev.Value, ev.Decimals), b.FormatUnits(b.maxTotal))
	}
	return v, nil
}

// decimalText writes an event's amount as it was sent (trailing zeros
// dropped).
func decimalText(v int64, places uint8) string {
	s := strconv.FormatInt(v, 10)
	if places == 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= int(places) {
		s = "0" + s
	}
	s = s[:len(s)-int(places)] + "." + s[len(s)-int(places):]
	if neg {
		s = "-" + s
	}
	return s
}
