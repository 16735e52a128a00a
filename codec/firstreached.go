package codec

import "fmt"

// NewFirstReached returns the layout of a board whose ties go to whoever got
// there first (seed 001, docs/DESIGN.md §4 and §8): the "total" field (totalBits,
// HigherFirst) above the "reached" field (the remaining 53-totalBits bits,
// LowerFirst, so that an earlier time ranks higher among equal totals).
//
// The layout holds numbers, not times: the caller chooses the unit and origin
// of "reached" so that it fits its width. Counting milliseconds from the start
// of the board's period (or of the oldest slice a rolling board keeps) needs
// far fewer bits than a Unix time. Some splits:
//
//	totalBits  largest total      reached bits  span in ms
//	23         8,388,607          30            about 12.4 days (a week)
//	21         2,097,151          32            about 49.7 days (a month)
//	18         262,143            35            about 1.1 years
//
// It returns an error when totalBits leaves no bit for "reached"
// (totalBits is 0 or at least MaxBits).
func NewFirstReached(totalBits uint8) (*Layout, error) {
	if totalBits == 0 || totalBits >= MaxBits {
		return nil, fmt.Errorf("codec: first-reached total bits %d out of range 1..%d", totalBits, MaxBits-1)
	}
	return NewLayout(
		Field{Name: "total", Bits: totalBits, Dir: HigherFirst},
		Field{Name: "reached", Bits: MaxBits - totalBits, Dir: LowerFirst},
	)
}
