package board

import (
	"fmt"
	"strconv"
	"strings"
)

// span is a range of offsets, both ends included.
type span struct{ lo, hi int64 }

// ranges is the applied offset ranges of one board and topic-partition as
// the apply script keeps them (lua/ranges.lua): sorted, disjoint, non-adjacent.
type ranges []span

// parseRanges reads the script's format, "lo-hi,lo-hi".
func parseRanges(s string) (ranges, error) {
	if s == "" {
		return nil, nil
	}
	var r ranges
	for f := range strings.SplitSeq(s, ",") {
		a, b, ok := strings.Cut(f, "-")
		lo, err1 := strconv.ParseInt(a, 10, 64)
		hi, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil || lo > hi || len(r) > 0 && lo <= r[len(r)-1].hi+1 {
			return nil, fmt.Errorf("applied ranges %q: bad range %q", s, f)
		}
		r = append(r, span{lo, hi})
	}
	return r, nil
}

// String renders r in the script's format.
func (r ranges) String() string {
	var sb strings.Builder
	for k, s := range r {
		if k > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatInt(s.lo, 10))
		sb.WriteByte('-')
		sb.WriteString(strconv.FormatInt(s.hi, 10))
	}
	return sb.String()
}

// contains reports whether offset o is in r.
func (r ranges) contains(o int64) bool {
	for _, s := range r {
		if o < s.lo {
			return false
		}
		if o <= s.hi {
			return true
		}
	}
	return false
}
