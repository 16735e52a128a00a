package flicker

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/meeting"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
)

// TestRoomRanksAsMemberState replays generated meetings under several
// ranking rules and checks, every few events, that the room's top-N is the
// one ranking.MemberState gives: the events so far folded per member (in
// reverse order: the registers do not depend on it), ranked members scored
// with MemberState.Score, best first, equal scores by id, greater first, as
// the sink orders them; urgent and flags as the stable step reads them from
// the decoded score.
func TestRoomRanksAsMemberState(t *testing.T) {
	const n = 7
	for _, rules := range []string{"", "audio,volume", "volume,audio,role", "role,volume,screen_share"} {
		mc := codec.NewMeeting(codec.DefaultEpoch)
		if rules != "" {
			r, err := codec.ParseRules(rules)
			if err != nil {
				t.Fatal(err)
			}
			if mc, err = codec.NewMeetingRules(codec.DefaultEpoch, r); err != nil {
				t.Fatal(err)
			}
		}
		for _, sc := range meeting.Scenarios() {
			evs := meeting.Generate(sc, 2*time.Minute, 3)
			rm := newRoom(mc)
			var got []stability.Member
			checked := 0
			for k, ev := range evs {
				rm.apply(ev)
				if k%211 != 0 && k != len(evs)-1 {
					continue
				}
				want, flags := wantTop(t, mc, evs[:k+1], n)
				got = rm.top(got, n)
				if !slices.Equal(got, want) {
					t.Fatalf("rules %q, %s, after %d events: top\n%+v\nwant\n%+v", rules, sc.Name, k+1, got, want)
				}
				for i, m := range want {
					if f := rm.flags(m.ID); f != flags[i] {
						t.Fatalf("rules %q, %s, after %d events: flags of %s %#x, want %#x", rules, sc.Name, k+1, m.ID, f, flags[i])
					}
				}
				checked++
			}
			if checked < 5 {
				t.Fatalf("%s: only %d checks in %d events", sc.Name, checked, len(evs))
			}
		}
	}
}

// wantTop folds evs per member with ranking.MemberState and returns the n
// best ranked members and their flags.
func wantTop(t *testing.T, mc *codec.Meeting, evs []codec.Event, n int) ([]stability.Member, []uint16) {
	t.Helper()
	states := map[string]*ranking.MemberState{}
	for i := len(evs) - 1; i >= 0; i-- {
		s := states[evs[i].UserID]
		if s == nil {
			s = &ranking.MemberState{}
			states[evs[i].UserID] = s
		}
		s.Apply(&evs[i])
	}
	var all []stability.Member
	fields := map[string]codec.MemberScore{}
	for id, s := range states {
		if !s.Ranked() {
			continue
		}
		score, err := s.Score(mc)
		if err != nil {
			t.Fatalf("score of %s: %v", id, err)
		}
		f, err := mc.Decode(score)
		if err != nil {
			t.Fatal(err)
		}
		fields[id] = f
		all = append(all, stability.Member{ID: id, Score: score, Urgent: ranking.Urgent(f)})
	}
	slices.SortFunc(all, func(a, b stability.Member) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(b.ID, a.ID))
	})
	all = all[:min(n, len(all))]
	flags := make([]uint16, len(all))
	for i, m := range all {
		flags[i] = ranking.Flags(fields[m.ID])
	}
	return all, flags
}

// TestRoomTies: members of equal score rank by id, greater first, as Redis
// orders them.
func TestRoomTies(t *testing.T) {
	mc := codec.NewMeeting(codec.DefaultEpoch)
	rm := newRoom(mc)
	ts := meeting.BaseTS
	for _, id := range []string{"u-b", "u-c", "u-a"} {
		rm.apply(codec.Event{Type: codec.TypeJoin, UserID: id, TS: ts})
		rm.apply(codec.Event{Type: codec.TypeAudio, UserID: id, Value: 1, TS: ts})
	}
	top := rm.top(nil, 2)
	if len(top) != 2 || top[0].ID != "u-c" || top[1].ID != "u-b" || top[0].Score != top[1].Score {
		t.Fatalf("top %+v, want u-c then u-b with equal scores", top)
	}
}

// TestRoomRefusesOutOfWindow: an event whose time the score cannot hold is
// not applied, as the processor refuses it.
func TestRoomRefusesOutOfWindow(t *testing.T) {
	mc := codec.NewMeeting(codec.DefaultEpoch)
	rm := newRoom(mc)
	ts := meeting.BaseTS
	rm.apply(codec.Event{Type: codec.TypeJoin, UserID: "u", TS: ts})
	rm.apply(codec.Event{Type: codec.TypeLeave, UserID: "u", TS: codec.DefaultEpoch.Add(codec.MeetingWindow).UnixMilli()})
	rm.apply(codec.Event{Type: codec.TypeJoin, UserID: "v", TS: codec.DefaultEpoch.UnixMilli() - 1})
	if top := rm.top(nil, 7); len(top) != 1 || top[0].ID != "u" {
		t.Fatalf("top %+v, want u alone", top)
	}
}

// TestRoomUrgentFollowsRules: a host takes a tile at once only when the
// rules rank on role, since the stable step reads urgency from the score;
// a presenter likewise only when they rank on screen share.
func TestRoomUrgentFollowsRules(t *testing.T) {
	for _, tt := range []struct {
		rules               string
		hostUrgent, sharing bool
	}{
		{"spotlight,screen_share,audio,volume,video,role", true, true},
		{"audio,volume", false, false},
		{"volume,audio,role", true, false},
		{"screen_share,audio,volume", false, true},
	} {
		r, err := codec.ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		mc, err := codec.NewMeetingRules(codec.DefaultEpoch, r)
		if err != nil {
			t.Fatal(err)
		}
		rm := newRoom(mc)
		ts := meeting.BaseTS
		rm.apply(codec.Event{Type: codec.TypeRole, UserID: "host", Value: int64(codec.RoleHost), TS: ts})
		rm.apply(codec.Event{Type: codec.TypeScreenShare, UserID: "presenter", Value: 1, TS: ts})
		got := map[string]bool{}
		for _, m := range rm.top(nil, 7) {
			got[m.ID] = m.Urgent
		}
		if got["host"] != tt.hostUrgent || got["presenter"] != tt.sharing {
			t.Errorf("rules %s: urgent %v, want host %v, presenter %v", tt.rules, got, tt.hostUrgent, tt.sharing)
		}
	}
}
