package flicker

import (
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/stability"
)

// member is a member's state as the ranking sees it (docs/DESIGN.md §2). The events
// of a generated meeting come in time order, so the newest event of each
// field wins simply by being applied last.
type member struct {
	audio, video uint8
	volume       uint16
	role         codec.Role
	present      bool
	ts           int64
	score        float64
}

// room is one meeting's ranking: every member's state and score.
type room struct {
	meeting *codec.Meeting
	ids     []string
	idx     map[string]int
	ms      []member
}

func newRoom(meeting *codec.Meeting) *room {
	return &room{meeting: meeting, idx: map[string]int{}}
}

// apply applies one event.
func (r *room) apply(ev codec.Event) {
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
	}
	m.score = -1
	if m.ranked() {
		s, err := r.meeting.Encode(codec.MemberScore{Audio: m.audio, Volume: m.volume, Video: m.video, Role: m.role, TS: m.ts})
		if err != nil {
			panic("flicker: generated event out of the score layout: " + err.Error())
		}
		m.score = s
	}
}

func (m *member) ranked() bool { return m.present && m.role.Ranked() }

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
		dst[j] = stability.Member{ID: id, Score: m.score, Urgent: m.role == codec.RoleHost}
	}
	return dst
}

func better(s1 float64, id1 string, s2 float64, id2 string) bool {
	return s1 > s2 || s1 == s2 && id1 > id2
}

// standing describes a shown member for the hysteresis: muted members drop
// out at once because audio is the meeting score's leading field.
func (r *room) standing(id string) stability.Standing {
	i, ok := r.idx[id]
	if !ok {
		return stability.Standing{}
	}
	m := &r.ms[i]
	return stability.Standing{Score: m.score, Ranked: m.ranked(), Drop: m.audio == 0}
}
