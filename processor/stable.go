package processor

import (
	"math"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
)

// The stable strategy (docs/DESIGN.md §5, docs/STABILITY.md).
//
// With StabilityMerge a room's list is stability.Merge of the stored list and
// the raw top-N. With StabilityHysteresis it is stability.Hysteresis.Step,
// whose state (waiting challengers, shown members out of the raw top-N, each
// with the time its wait began) is stored with the list in the room's
// stable hash and guarded by the same compare-and-set, so a restart or a
// rebalance resumes exactly where the last store left off.
//
// Decision time. Every decision is taken on the room's event clock, never
// on the processor's wall clock: a batch steps a room at the newest event
// time of that room's events in the batch, the timer steps a due room at the
// deadline it was due at, and neither ever goes below the newest time in the
// stored state (events arrive out of order across topics). A redelivered
// batch therefore steps at the time the first delivery did, and a replay of
// old events waits the dwell in event time, not in the time the replay
// takes. The wall clock only says when the timer looks for due rooms: a room
// is stepped once the wall clock passes its deadline, so with producers'
// clocks behind the processor's a decision falls due at once, and with
// clocks ahead it waits for them (or for the room's next event).

// Stable strategies (Config.Stable.Strategy).
const (
	StabilityHysteresis = "hysteresis" // stability.Hysteresis; the default
	StabilityMerge      = "merge"      // the merge of seed 003, stability.Merge
)

// hysteresis returns the configured hysteresis, or nil with the seed merge.
func (c *Config) hysteresis() *stability.Hysteresis {
	if c.Stable.Strategy != StabilityHysteresis {
		return nil
	}
	margin := math.Inf(1) // off: only the dwell lets a challenger in
	if step := c.Meeting.Multiplier(codec.RuleVolume); c.Stable.Margin > 0 && step > 0 {
		margin = float64(c.Stable.Margin) * float64(step)
	}
	return &stability.Hysteresis{N: c.TopN, Dwell: c.Stable.Dwell, Grace: c.Stable.Grace, Margin: margin}
}

// stableStrategy is the configured stable step (stable) and its timer
// (due.go).
type stableStrategy struct {
	hyst      *stability.Hysteresis // nil: the seed merge
	dropMuted bool                  // audio leads the score (after spotlight, screen share): a muted member leaves the shown list at once
	scratch   stableScratch         // reused by stable
	lastDue   time.Time             // the timer's last look for due rooms
}

// stableScratch is the reused memory of stable: the inputs of a merge are
// built per room and batch, and never outlive the call.
type stableScratch struct {
	ids      []string
	raw      []stability.Member
	standing []stability.Standing
	shown    []uint16
	text     []byte
}

// newStableStrategy is the stable step cfg configures (cfg's defaults
// applied).
func newStableStrategy(cfg *Config) stableStrategy {
	return stableStrategy{hyst: cfg.hysteresis(), dropMuted: ranking.AudioLeads(cfg.Meeting.Rules())}
}

// stable returns room st's next stable list, its state (text: the
// hysteresis timers, none with the seed merge, and the flags of the listed
// members), the state's next deadline (0: none), and whether a listed
// member's flags changed since the list was last published (a republish
// even when the list stays). ts is the newest event time of the room's
// events in the batch, or the deadline the timer steps it at; 0 when
// unknown.
func (p *Processor) stable(st *ranking.RoomState, ts int64) (list []string, state string, due int64, flagsChanged bool) {
	var hs stability.State
	if err := hs.UnmarshalText([]byte(st.HState)); err != nil {
		// Only a foreign write can cause it; starting afresh costs one dwell.
		p.lg.Warn("hysteresis state unreadable, starting afresh", zap.String("room", st.Room), zap.Error(err))
		hs = stability.State{}
	}
	prev := hs.Shown
	if len(prev) != len(st.Stable) {
		prev = nil // not recorded for this list
	}
	if p.strategy.hyst == nil {
		ids := p.strategy.scratch.ids[:0]
		for _, m := range st.Top {
			ids = append(ids, m.UserID)
		}
		p.strategy.scratch.ids = ids
		list = stability.Merge(nil, st.Stable, ids, p.cfg.TopN)
	} else {
		list = p.hysteresisStep(st, ts, &hs, prev)
		due = p.strategy.hyst.Next(&hs)
	}
	var shown []uint16 // nil for an empty list: nothing to remember
	if len(list) > 0 {
		shown = p.strategy.scratch.shown[:0]
		for _, id := range list {
			f, _ := p.cfg.Meeting.Decode(scoreOf(st, id))
			shown = append(shown, ranking.Flags(f))
		}
		p.strategy.scratch.shown = shown
	}
	flagsChanged = prev != nil && !slices.Equal(prev, shown)
	hs.Shown = shown
	// The state text, allocated only when it differs from the stored one.
	p.strategy.scratch.text, _ = hs.AppendText(p.strategy.scratch.text[:0])
	state = st.HState
	if string(p.strategy.scratch.text) != st.HState {
		state = string(p.strategy.scratch.text)
	}
	return list, state, due, flagsChanged
}

// hysteresisStep takes the hysteresis step of room st with state hs; prev
// are the flags of st.Stable's members as last published (nil: unknown).
func (p *Processor) hysteresisStep(st *ranking.RoomState, ts int64, hs *stability.State, prev []uint16) []string {
	raw := grow(p.strategy.scratch.raw, len(st.Top))
	p.strategy.scratch.raw = raw
	var newest int64
	for i, m := range st.Top {
		f, _ := p.cfg.Meeting.Decode(m.Score) // scores come from the apply script
		raw[i] = stability.Member{ID: m.UserID, Score: m.Score, Urgent: ranking.Urgent(f)}
		newest = max(newest, f.TS)
	}
	standing := grow(p.strategy.scratch.standing, len(st.Stable))
	p.strategy.scratch.standing = standing
	for i := range st.Stable {
		if i >= len(st.StableScores) || st.StableScores[i] == ranking.Unranked {
			continue // not ranked: leaves at once
		}
		score := st.StableScores[i]
		f, _ := p.cfg.Meeting.Decode(score)
		newest = max(newest, f.TS)
		var shown uint16 // 0: the flags last published are unknown
		if prev != nil {
			shown = prev[i]
		}
		standing[i] = stability.Standing{Score: score, Ranked: true, Drop: ranking.Drop(f, shown, p.strategy.dropMuted)}
	}
	now := ts
	if now == 0 {
		// A room stepped without events of its own (recovery): its newest
		// member time is the closest thing to its event clock.
		now = newest
	}
	if now == 0 {
		now = time.Now().UnixMilli()
	}
	now = max(now, hs.Latest())
	return p.strategy.hyst.Step(nil, hs, st.Stable, standing, raw, now)
}
