package flicker

import (
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
)

// member is one member of a replayed room: its state as the processor folds
// it (ranking.MemberState), and what the stable step reads of it, brought up
// to date by every event.
type member struct {
	state ranking.MemberState
	score float64 // its score in the ranking; ranking.Unranked when not ranked
	// fields is score decoded, as the stable step reads the scores it is
	// given: a field the rules leave out is 0. Zero when not ranked.
	fields codec.MemberScore
}

func (m *member) ranked() bool { return m.score != ranking.Unranked }

// room is one meeting's ranking: every member's state and score.
type room struct {
	meeting    *codec.Meeting
	audioLeads bool // a muted shown member leaves at once (ranking.AudioLeads)
	ids        []string
	idx        map[string]int
	ms         []member
}

func newRoom(meeting *codec.Meeting) *room {
	return &room{meeting: meeting, audioLeads: ranking.AudioLeads(meeting.Rules()), idx: map[string]int{}}
}

// apply applies one meeting event; other events are skipped, and so is one
// whose time the score cannot hold, as the processor refuses it.
func (r *room) apply(ev codec.Event) {
	if !ev.Type.Meeting() || r.meeting.CheckTime(ev.TS) != nil {
		return
	}
	i, ok := r.idx[ev.UserID]
	if !ok {
		i = len(r.ms)
		r.idx[ev.UserID] = i
		r.ids = append(r.ids, ev.UserID)
		r.ms = append(r.ms, member{})
	}
	m := &r.ms[i]
	m.state.Apply(&ev)
	m.score, m.fields = ranking.Unranked, codec.MemberScore{}
	if !m.state.Ranked() {
		return
	}
	s, err := m.state.Score(r.meeting)
	if err != nil {
		return // a value out of range: the sink refuses to store it
	}
	m.score = s
	m.fields, _ = r.meeting.Decode(s)
}

// flags are what an output record shows of a member besides its volume
// (ranking.Flags): a change of them republishes the list.
func (r *room) flags(id string) uint16 {
	i, ok := r.idx[id]
	if !ok {
		return 0
	}
	return ranking.Flags(r.ms[i].fields)
}

// top appends the n best ranked members to dst[:0], best first, in the
// order of better.
func (r *room) top(dst []stability.Member, n int) []stability.Member {
	dst = dst[:0]
	for i := range r.ms {
		m := &r.ms[i]
		if !m.ranked() {
			continue
		}
		id := r.ids[i]
		// Insertion into the short sorted dst.
		j := len(dst)
		for j > 0 && better(m.score, id, dst[j-1].Score, dst[j-1].ID) {
			j--
		}
		if j >= n {
			continue
		}
		if len(dst) < n {
			dst = append(dst, stability.Member{})
		}
		copy(dst[j+1:], dst[j:len(dst)-1])
		dst[j] = stability.Member{ID: id, Score: m.score, Urgent: ranking.Urgent(m.fields)}
	}
	return dst
}

// better reports whether score s1 of member id1 ranks before score s2 of
// id2 in the raw top-N: the higher score, and of equal scores the greater
// id, as Redis's ZREVRANGE orders them (and the sink's state cache with
// them).
func better(s1 float64, id1 string, s2 float64, id2 string) bool {
	return s1 > s2 || s1 == s2 && id1 > id2
}

// standing describes a shown member for the hysteresis, as the processor's
// stable step does; shown are its flags when the list was published.
func (r *room) standing(id string, shown uint16) stability.Standing {
	i, ok := r.idx[id]
	if !ok || !r.ms[i].ranked() {
		return stability.Standing{}
	}
	m := &r.ms[i]
	return stability.Standing{Score: m.score, Ranked: true, Drop: ranking.Drop(m.fields, shown, r.audioLeads)}
}
