package model

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
)

const t0 = int64(1763700000000) // 2025-11-21, inside the default score window

func ev(user string, typ codec.Type, value int64, ts int64) codec.Event {
	return codec.Event{RoomID: "r-1", UserID: user, Type: typ, Value: value, TS: ts, Source: codec.SourceRTC}
}

func join(user string, ts int64) codec.Event  { return ev(user, codec.TypeJoin, 0, ts) }
func leave(user string, ts int64) codec.Event { return ev(user, codec.TypeLeave, 0, ts) }
func audio(user string, v, ts int64) codec.Event {
	return ev(user, codec.TypeAudio, v, ts)
}
func video(user string, v, ts int64) codec.Event {
	return ev(user, codec.TypeVideo, v, ts)
}
func volume(user string, v, ts int64) codec.Event {
	return ev(user, codec.TypeVolume, v, ts)
}
func role(user string, r codec.Role, ts int64) codec.Event {
	return ev(user, codec.TypeRole, int64(r), ts)
}

// ranked is the expected ranked member; score is computed by the test.
type ranked struct {
	user                 string
	audio, volume, video int
	role                 codec.Role
	ts                   int64
}

func want(t *testing.T, meeting *codec.Meeting, rs ...ranked) []Member {
	t.Helper()
	out := []Member{}
	for _, r := range rs {
		m := Member{UserID: r.user, Audio: uint8(r.audio), Volume: uint16(r.volume), Video: uint8(r.video), Role: r.role, TS: r.ts}
		score, err := meeting.Encode(codec.MemberScore{Audio: m.Audio, Volume: m.Volume, Video: m.Video, Role: m.Role, TS: m.TS})
		if err != nil {
			t.Fatalf("encode %+v: %v", r, err)
		}
		m.Score = score
		out = append(out, m)
	}
	return out
}

func TestRanking(t *testing.T) {
	meeting := codec.NewMeeting(codec.DefaultEpoch)
	// 4 ms apart: the default rules count time in 4 ms units.
	const t1, t2, t3, t4 = t0 + 4, t0 + 8, t0 + 12, t0 + 16
	tests := []struct {
		name   string
		events []codec.Event
		want   []ranked
	}{
		{"new member starts with defaults", []codec.Event{join("a", t1)},
			[]ranked{{"a", 0, 0, 0, codec.RoleStudent, t1}}},
		{"newer value wins", []codec.Event{volume("a", 100, t1), volume("a", 200, t2)},
			[]ranked{{"a", 0, 200, 0, codec.RoleStudent, t2}}},
		{"older value loses, time is the newest", []codec.Event{volume("a", 10, t2), volume("a", 900, t1)},
			[]ranked{{"a", 0, 10, 0, codec.RoleStudent, t2}}},
		{"volume tie at one ts: louder wins", []codec.Event{volume("a", 100, t1), volume("a", 300, t1)},
			[]ranked{{"a", 0, 300, 0, codec.RoleStudent, t1}}},
		{"audio tie at one ts: on wins", []codec.Event{audio("a", 1, t1), audio("a", 0, t1)},
			[]ranked{{"a", 1, 0, 0, codec.RoleStudent, t1}}},
		{"video tie at one ts: on wins", []codec.Event{video("a", 0, t1), video("a", 1, t1)},
			[]ranked{{"a", 0, 0, 1, codec.RoleStudent, t1}}},
		{"role tie at one ts: higher role wins", []codec.Event{role("a", codec.RoleHost, t1), role("a", codec.RoleGuest, t1)},
			[]ranked{{"a", 0, 0, 0, codec.RoleHost, t1}}},
		{"role tie with an excluded role: the excluded role wins", []codec.Event{role("a", codec.RoleHost, t1), role("a", codec.RoleAssistant, t1)},
			nil},
		{"leave wins a tie with join", []codec.Event{join("a", t1), leave("a", t1)},
			nil},
		{"leave wins a tie with an implicit join", []codec.Event{volume("a", 500, t1), leave("a", t1)},
			nil},
		{"leave then rejoin", []codec.Event{join("a", t1), leave("a", t2), join("a", t3)},
			[]ranked{{"a", 0, 0, 0, codec.RoleStudent, t3}}},
		{"rejoin keeps the fields", []codec.Event{audio("a", 1, t1), leave("a", t2), join("a", t3)},
			[]ranked{{"a", 1, 0, 0, codec.RoleStudent, t3}}},
		{"join older than the leave stays out", []codec.Event{leave("a", t2), join("a", t1)},
			nil},
		{"implicit join by a newer event", []codec.Event{join("a", t1), leave("a", t2), volume("a", 700, t3)},
			[]ranked{{"a", 0, 700, 0, codec.RoleStudent, t3}}},
		{"old event after a newer leave updates its field, member stays out", []codec.Event{leave("a", t2), audio("a", 1, t1)},
			nil},
		{"time counts the leave", []codec.Event{audio("a", 1, t1), leave("a", t3), join("a", t2), video("a", 1, t4)},
			[]ranked{{"a", 1, 0, 1, codec.RoleStudent, t4}}},
		{"broadcast_control leaves the ranking", []codec.Event{join("a", t1), role("a", codec.RoleBroadcastControl, t2)},
			nil},
		{"screen_picker leaves the ranking", []codec.Event{join("a", t1), role("a", codec.RoleScreenPicker, t2)},
			nil},
		{"assistant leaves the ranking", []codec.Event{join("a", t1), role("a", codec.RoleAssistant, t2)},
			nil},
		{"an excluded role given back", []codec.Event{role("a", codec.RoleAssistant, t1), volume("a", 3, t2), role("a", codec.RoleGuest, t3)},
			[]ranked{{"a", 0, 3, 0, codec.RoleGuest, t3}}},
		{"an older ranked role does not undo an excluded one", []codec.Event{role("a", codec.RoleScreenPicker, t2), role("a", codec.RoleHost, t1)},
			nil},
		{"audio on ranks above any volume", []codec.Event{audio("a", 1, t1), volume("b", 999, t2), video("b", 1, t2), role("b", codec.RoleHost, t2)},
			[]ranked{{"a", 1, 0, 0, codec.RoleStudent, t1}, {"b", 0, 999, 1, codec.RoleHost, t2}}},
		{"higher role first, then newer", []codec.Event{join("a", t2), role("b", codec.RoleHost, t1), join("c", t1)},
			[]ranked{{"b", 0, 0, 0, codec.RoleHost, t1}, {"a", 0, 0, 0, codec.RoleStudent, t2}, {"c", 0, 0, 0, codec.RoleStudent, t1}}},
		{"equal scores by user id, greatest first", []codec.Event{join("u-B", t1), join("u-a", t1), join("u-b", t1), join("u-aa", t1)},
			[]ranked{{"u-b", 0, 0, 0, codec.RoleStudent, t1}, {"u-aa", 0, 0, 0, codec.RoleStudent, t1}, {"u-a", 0, 0, 0, codec.RoleStudent, t1}, {"u-B", 0, 0, 0, codec.RoleStudent, t1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := want(t, meeting, tt.want...)
			// The same events in reverse order must give the same ranking.
			for _, order := range []string{"forward", "reverse"} {
				events := slices.Clone(tt.events)
				if order == "reverse" {
					slices.Reverse(events)
				}
				m := New(meeting)
				for _, e := range events {
					m.Apply(e)
				}
				if got := m.Ranking("r-1"); !reflect.DeepEqual(got, w) {
					t.Errorf("%s: Ranking = %+v, want %+v", order, got, w)
				}
			}
		})
	}
}

func TestState(t *testing.T) {
	m := New(codec.NewMeeting(codec.DefaultEpoch))
	if _, ok := m.State("r-1", "a"); ok {
		t.Fatal("State of an unseen member reports ok")
	}
	m.Apply(role("a", codec.RoleAssistant, t0+5))
	m.Apply(volume("a", 42, t0+3))
	m.Apply(leave("a", t0+4))
	got, ok := m.State("r-1", "a")
	want := MemberState{
		Audio:    Register{Value: 0, TS: 0},
		Volume:   Register{Value: 42, TS: t0 + 3},
		Video:    Register{Value: 0, TS: 0},
		Role:     Register{Value: int64(codec.RoleAssistant), TS: t0 + 5},
		Presence: Register{Value: PresenceIn, TS: t0 + 5},
		Time:     t0 + 5,
	}
	if !ok || got != want {
		t.Fatalf("State = %+v, %v; want %+v, true", got, ok, want)
	}
	if got.Ranked() {
		t.Error("a member with role assistant is ranked")
	}
}

func TestRoomsAndTop(t *testing.T) {
	meeting := codec.NewMeeting(codec.DefaultEpoch)
	m := New(meeting)
	for i, u := range []string{"a", "b", "c"} {
		m.Apply(volume(u, int64(100*(i+1)), t0))
	}
	other := leave("x", t0)
	other.RoomID = "r-0"
	m.Apply(other)

	if got, want := m.Rooms(), []string{"r-0", "r-1"}; !slices.Equal(got, want) {
		t.Errorf("Rooms = %v, want %v", got, want)
	}
	if got := m.Ranking("r-0"); got == nil || len(got) != 0 {
		t.Errorf("Ranking of a room with no ranked member = %#v, want empty", got)
	}
	if got := m.Ranking("nope"); got == nil || len(got) != 0 {
		t.Errorf("Ranking of an unknown room = %#v, want empty", got)
	}
	for _, tt := range []struct {
		n    int
		want []string
	}{{-1, nil}, {0, nil}, {2, []string{"c", "b"}}, {3, []string{"c", "b", "a"}}, {7, []string{"c", "b", "a"}}} {
		var got []string
		for _, mem := range m.Top("r-1", tt.n) {
			got = append(got, mem.UserID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Top(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

func TestApplyPanicsOnInvalidEvents(t *testing.T) {
	tests := []struct {
		name string
		ev   codec.Event
	}{
		{"zero type", ev("a", 0, 0, t0)},
		{"unknown type", ev("a", 99, 0, t0)},
		{"audio 2", audio("a", 2, t0)},
		{"video -1", video("a", -1, t0)},
		{"volume 1000", volume("a", 1000, t0)},
		{"role 0", role("a", 0, t0)},
		{"role 8", role("a", 8, t0)},
		{"join with a value", ev("a", codec.TypeJoin, 1, t0)},
		{"empty user", join("", t0)},
		{"ts before the epoch", join("a", codec.DefaultEpoch.UnixMilli()-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Apply(%+v) did not panic", tt.ev)
				}
			}()
			New(codec.NewMeeting(codec.DefaultEpoch)).Apply(tt.ev)
		})
	}
}

// TestOrderAndDuplicatesDoNotMatter applies random multisets of events
// with many ties, once in order and once shuffled with duplicates, and
// expects the same state and rankings.
func TestOrderAndDuplicatesDoNotMatter(t *testing.T) {
	meeting := codec.NewMeeting(codec.DefaultEpoch)
	rooms := []string{"r-1", "r-2"}
	users := []string{"a", "b", "c", "d"}
	for seed := range uint64(1000) {
		rng := rand.New(rand.NewPCG(seed, 1))
		events := make([]codec.Event, 1+rng.IntN(60))
		for i := range events {
			e := codec.Event{
				RoomID: rooms[rng.IntN(len(rooms))],
				UserID: users[rng.IntN(len(users))],
				Type:   codec.Type(1 + rng.IntN(6)),
				TS:     t0 + rng.Int64N(6), // few distinct times: many ties
				Source: codec.Source(1 + rng.IntN(3)),
			}
			switch e.Type {
			case codec.TypeAudio, codec.TypeVideo:
				e.Value = rng.Int64N(2)
			case codec.TypeVolume:
				e.Value = []int64{0, 1, 500, 999}[rng.IntN(4)]
			case codec.TypeRole:
				e.Value = 1 + rng.Int64N(7)
			}
			events[i] = e
		}
		other := slices.Clone(events)
		for range rng.IntN(len(events) + 1) {
			other = append(other, events[rng.IntN(len(events))])
		}
		rng.Shuffle(len(other), func(i, j int) { other[i], other[j] = other[j], other[i] })

		a, b := New(meeting), New(meeting)
		for _, e := range events {
			a.Apply(e)
		}
		for _, e := range other {
			b.Apply(e)
		}
		if !slices.Equal(a.Rooms(), b.Rooms()) {
			t.Fatalf("seed %d: Rooms %v != %v", seed, a.Rooms(), b.Rooms())
		}
		for _, room := range a.Rooms() {
			if ra, rb := a.Ranking(room), b.Ranking(room); !reflect.DeepEqual(ra, rb) {
				t.Fatalf("seed %d room %s: rankings differ\n in order: %+v\nshuffled: %+v\nevents: %+v", seed, room, ra, rb, events)
			}
			for _, user := range users {
				sa, oka := a.State(room, user)
				sb, okb := b.State(room, user)
				if sa != sb || oka != okb {
					t.Fatalf("seed %d %s/%s: state %+v,%v != %+v,%v", seed, room, user, sa, oka, sb, okb)
				}
			}
		}
	}
}

// TestScoreTable pins scores of several rule sets, boundaries included,
// computed by hand: the model's own arithmetic and the production codec
// must both give them.
func TestScoreTable(t *testing.T) {
	e := codec.DefaultEpoch.UnixMilli()
	last := e + 1<<38 - 1 // the window's last ms
	tests := []struct {
		rules string
		m     Member
		want  float64
	}{
		{"spotlight,screen_share,audio,volume,video,role", Member{Spotlight: 1, Audio: 1, Volume: 999, Video: 1, Role: codec.RoleHost, TS: last}, 6728805003558911},
		{"spotlight,screen_share,audio,volume,video,role", Member{ScreenShare: 1, Role: codec.RoleStudent, TS: e + 7}, 2251868533161985},
		{"audio,volume,video,role", Member{Spotlight: 1, ScreenShare: 1, Audio: 1, Volume: 512, Role: codec.RoleCohost, TS: e + 123456789}, 6756224198233365},
		{"spotlight,audio,volume,video,role", Member{Spotlight: 1, Volume: 1, Video: 1, Role: codec.RoleGuest, TS: e + 5}, 4507173040160770},
		{"role,screen_share", Member{Spotlight: 1, ScreenShare: 1, Audio: 1, Volume: 7, Video: 1, Role: codec.RoleHost, TS: last}, 2748779069439},
	}
	for _, tt := range tests {
		rules, err := codec.ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		meeting, err := codec.NewMeetingRules(codec.DefaultEpoch, rules)
		if err != nil {
			t.Fatal(err)
		}
		if got := New(meeting).score(tt.m); got != tt.want {
			t.Errorf("%s %+v: model %.0f, want %.0f", tt.rules, tt.m, got, tt.want)
		}
		got, err := meeting.Encode(codec.MemberScore{Spotlight: tt.m.Spotlight, ScreenShare: tt.m.ScreenShare, Audio: tt.m.Audio,
			Volume: tt.m.Volume, Video: tt.m.Video, Role: tt.m.Role, TS: tt.m.TS})
		if err != nil || got != tt.want {
			t.Errorf("%s %+v: codec %.0f %v, want %.0f", tt.rules, tt.m, got, err, tt.want)
		}
	}
}
