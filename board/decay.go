package board

import (
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// Total boards' event-id buckets, and what the store must keep of decay;
// the formulas' pure parts are boarddef's (boarddef/decay.go), and their
// one home is docs/DESIGN.md §8 "Total boards and decay" and "Rolling
// boards with decay". What the code here and in the scripts must keep, at
// the point of use:
//
//   - Sums are integers below 2^53, the same in any order within a base;
//     an entry that would pass ±(2^53 − 1) is not added (saturated), never
//     clamped.
//   - The base moves only forward, in the script that adds (apply.lua) or
//     on the tick (rebase.lua), before anything is added; a rolling board's
//     rebase divides every slice and resets every window sum to the sum of
//     its slices in the same script, so the expiry leaves no residue.
//   - Late: below the base, or (rolling) its slice left the window plus
//     grace; Batch.Add refuses by record time, the script again by the base.

// idDay is the bucket of a total board's event ids without decay.
const idDay = 24 * time.Hour

// totalBucket returns the bucket of total board b's event at Unix ms ts:
// its half-life index h with decay, else its UTC day (the id set).
func totalBucket(b *boarddef.Board, ts int64) int64 {
	if b.HalfLife() > 0 {
		return b.HalfLifeOf(ts)
	}
	return floorDiv(ts, idDay.Milliseconds())
}

// totalIDsExpireAt returns when the id set of total board b's bucket bk
// may go: two days after its day, or (decay) after its half-life is late
// for sure.
func totalIDsExpireAt(b *boarddef.Board, bk int64) int64 {
	if b.HalfLife() > 0 {
		H := b.HalfLife().Milliseconds()
		return b.Epoch().UnixMilli() + (bk+3)*H + b.Grace().Milliseconds()
	}
	return (bk + 3) * idDay.Milliseconds()
}
