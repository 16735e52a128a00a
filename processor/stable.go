package processor

import (
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
)

// The stable strategy (docs/DESIGN.md §5, docs/STABILITY.md).
//
// With StabilitySeed a room's list is stability.Merge of the stored list and
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

// Stable strategies (Config.Stability).
const (
	StabilityHysteresis = "hysteresis" // stability.Hysteresis; the default
	StabilitySeed       = "seed"       // seed 003's merge, stability.Merge
)

// hysteresis returns the configured hysteresis, or nil with the seed merge.
func (c *Config) hysteresis() *stability.Hysteresis {
	if c.Stability != StabilityHysteresis {
		return nil
	}
	margin := math.Inf(1) // off: only the dwell lets a challenger in
	if c.Margin > 0 {
		margin = float64(c.Margin) * volumeStep(c.Meeting)
	}
	return &stability.Hysteresis{N: c.TopN, Dwell: c.Dwell, Grace: c.Grace, Margin: margin}
}

// volumeStep is the score of one step of the meeting layout's volume field.
func volumeStep(m *codec.Meeting) float64 {
	for _, f := range m.Layout().Fields() {
		if f.Name == "volume" {
			return float64(uint64(1) << f.Shift)
		}
	}
	panic("processor: meeting layout without a volume field")
}

// stableScratch is the reused memory of stable: the inputs of a merge are
// built per room and batch, and never outlive the call.
type stableScratch struct {
	ids      []string
	raw      []stability.Member
	standing []stability.Standing
}

// stable returns room st's next stable list, its hysteresis state (text; ""
// with the seed merge) and the state's next deadline (0: none). ts is the
// newest event time of the room's events in the batch, or the deadline the
// timer steps it at; 0 when unknown.
func (p *Processor) stable(st *ranking.RoomState, ts int64) (list []string, state string, due int64) {
	if p.hyst == nil {
		ids := p.scratch.ids[:0]
		for _, m := range st.Top {
			ids = append(ids, m.UserID)
		}
		p.scratch.ids = ids
		return stability.Merge(nil, st.Stable, ids, p.cfg.TopN), "", 0
	}
	var hs stability.State
	if err := hs.UnmarshalText([]byte(st.HState)); err != nil {
		// Only a foreign write can cause it; starting afresh costs one dwell.
		p.lg.Warn("hysteresis state unreadable, starting afresh", zap.String("room", st.Room), zap.Error(err))
		hs = stability.State{}
	}
	raw := grow(p.scratch.raw, len(st.Top))
	p.scratch.raw = raw
	var newest int64
	for i, m := range st.Top {
		f, _ := p.cfg.Meeting.Decode(m.Score) // scores come from the apply script
		raw[i] = stability.Member{ID: m.UserID, Score: m.Score, Urgent: f.Role == codec.RoleHost}
		newest = max(newest, f.TS)
	}
	standing := grow(p.scratch.standing, len(st.Stable))
	p.scratch.standing = standing
	for i := range st.Stable {
		if i >= len(st.StableScores) || st.StableScores[i] == ranking.Unranked {
			continue // not ranked: leaves at once
		}
		score := st.StableScores[i]
		f, _ := p.cfg.Meeting.Decode(score)
		newest = max(newest, f.TS)
		standing[i] = stability.Standing{Score: score, Ranked: true, Drop: p.dropMuted && f.Audio == 0}
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
	list = p.hyst.Step(nil, &hs, st.Stable, standing, raw, now)
	return list, hs.String(), p.hyst.Next(&hs)
}
