package flicker

import (
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/stability"
)

// member is a member's state as the ranking sees it (docs/DESIGN.md §2).
// The events of a replayed meeting come in time order, so the newest event
// of each field wins simply by being applied last.
type member struct {
	audio, video     uint8
	share, spotlight uint8
	volume           uint16
	role             codec.Role
	present          bool
	ts               int64
	score            float64
}

// room is one meeting's ranking: every member's state and score.
type room struct {
	meeting   *codec.Meeting
	audioLead bool // audio leads the rules (after spotlight, screen share): a muted member drops at once
	ids       []string
	idx       map[string]int
	ms        []member
}

func newRoom(meeting *codec.Meeting) *room {
	return &room{meeting: meeting, audioLead: audioLeads(meeting.Rules()), idx: map[string]int{}}
}

// audioLeads reports whether only spotlight and screen share come before
// audio in the rules (as the processor decides when a mute drops a tile).
func audioLeads(r codec.Rules) bool {
	for _, f := range r {
		switch f {
		case codec.RuleAudio:
			return true
		case codec.RuleSpotlight, codec.RuleScreenShare:
		default:
			return false
		}
	}
	return false
}

// apply applies one meeting event; other events are skipped.
func (r *room) apply(ev codec.Event) {
	if !ev.Type.Meeting() {
		return
	}
	i, ok := r.idx[ev.UserID]
	if !ok {
		i = len(r.ms)
		r.idx[ev.UserID] = i
		r.ids = append(r.ids, ev.UserID)
		r.ms = append(r.ms, member{role: codec.RoleStudent})
	}
	m := &r.ms[i]
	m.ts = max(m.ts, ev.TS)
	m.present = ev.Type != codec.TypeLeave
	switch ev.Type {
	case codec.TypeAudio:
		m.audio = uint8(ev.Value)
	case codec.TypeVideo:
		m.video = uint8(ev.Value)
	case codec.TypeVolume:
		m.volume = uint16(ev.Value)
	case codec.TypeRole:
		m.role = codec.Role(ev.Value)
	case codec.TypeScreenShare:
		m.share = uint8(ev.Value)
	case codec.TypeSpotlight:
		m.spotlight = uint8(ev.Value)
	}
	m.score = -1
	if m.ranked() {
		s, err := r.meeting.Encode(codec.MemberScore{Spotlight: m.spotlight, ScreenShare: m.share, Audio: m.audio,
			Volume: m.volume, Video: m.video, Role: m.role, TS: m.ts})
		if err != nil {
			m.present = false // outside the score window: the processor refuses it
			return
		}
		m.score = s
	}
}

func (m *member) ranked() bool { return m.present && m.role.Ranked() }

// urgent: a host, a presenter and a member in the spotlight take a tile at
// once.
func (m *member) urgent() bool { return m.role == codec.RoleHost || m.share == 1 || m.spotlight == 1 }

// flags are what an output record shows of a member besides its volume:
// a change of them republishes the list (docs/DESIGN.md §10). Fields the
// rules leave out are not shown.
func (r *room) flags(id string) uint16 {
	i, ok := r.idx[id]
	if !ok {
		return 0
	}
	m := &r.ms[i]
	f := r.meeting
	var x uint16
	if f.Has(codec.RuleSpotlight) {
		x |= uint16(m.spotlight)
	}
	if f.Has(codec.RuleScreenShare) {
		x |= uint16(m.share) << 1
	}
	if f.Has(codec.RuleAudio) {
		x |= uint16(m.audio) << 2
	}
	if f.Has(codec.RuleVideo) {
		x |= uint16(m.video) << 3
	}
	if f.Has(codec.RuleRole) {
		x |= uint16(m.role) << 4
	}
	return x
}

// top appends the n best ranked members to dst[:0], best first; equal
// scores rank by id, greater first, as Redis's ZREVRANGE orders them.
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
		dst[j] = stability.Member{ID: id, Score: m.score, Urgent: m.urgent()}
	}
	return dst
}

func better(s1 float64, id1 string, s2 float64, id2 string) bool {
	return s1 > s2 || s1 == s2 && id1 > id2
}

// standing describes a shown member for the hysteresis: a muted member
// drops out at once while audio leads the score, and so does one that
// stopped sharing or left the spotlight since the list was published
// (shown: its flags then).
func (r *room) standing(id string, shown uint16) stability.Standing {
	i, ok := r.idx[id]
	if !ok {
		return stability.Standing{}
	}
	m := &r.ms[i]
	stopped := shown&^r.flags(id)&3 != 0
	return stability.Standing{Score: m.score, Ranked: m.ranked(), Drop: (r.audioLead && m.audio == 0) || stopped}
}
