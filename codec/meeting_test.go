package codec

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestMeetingLayout(t *testing.T) {
	m := legacyMeeting(DefaultEpoch)
	l := m.Layout()
	if s, want := l.String(), "audio:1 volume:10 video:1 role:3 time:38 (53 bits)"; s != want {
		t.Errorf("String = %q, want %q", s, want)
	}
	// The shifts drawn in doc.go.
	want := []FieldInfo{
		{Name: "audio", Bits: 1, Shift: 52, Max: 1},
		{Name: "volume", Bits: 10, Shift: 42, Max: 1023},
		{Name: "video", Bits: 1, Shift: 41, Max: 1},
		{Name: "role", Bits: 3, Shift: 38, Max: 7},
		{Name: "time", Bits: 38, Shift: 0, Max: 1<<38 - 1},
	}
	for i, f := range l.Fields() {
		if f != want[i] {
			t.Errorf("field %d = %+v, want %+v", i, f, want[i])
		}
	}
	if MeetingWindow != (1<<38)*time.Millisecond {
		t.Errorf("MeetingWindow = %v, want 2^38 ms", MeetingWindow)
	}
	end := DefaultEpoch.Add(MeetingWindow)
	if want := time.Date(2033, 9, 17, 10, 58, 26, 944e6, time.UTC); !end.Equal(want) {
		t.Errorf("default window ends %v, want %v", end, want)
	}
	if years := MeetingWindow.Hours() / 24 / 365.25; years < 8.7 || years > 8.72 {
		t.Errorf("window is %.2f years, doc.go says about 8.7", years)
	}
}

func TestNewMeetingEpoch(t *testing.T) {
	if got := NewMeeting(time.Time{}).Epoch(); !got.Equal(DefaultEpoch) {
		t.Errorf("zero epoch gives %v, want DefaultEpoch", got)
	}
	e := time.Date(2026, 3, 1, 8, 0, 0, 123456789, time.FixedZone("CST", 8*3600))
	m := legacyMeeting(e)
	if got, want := m.Epoch(), e.Truncate(time.Millisecond); !got.Equal(want) {
		t.Errorf("Epoch = %v, want %v", got, want)
	}
	s := MemberScore{Audio: 1, Volume: 7, Role: RoleGuest, TS: e.UnixMilli()}
	score, err := m.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := m.Layout().Decode(score, nil); v[4] != 0 {
		t.Errorf("the epoch's own millisecond encodes as time %d, want 0", v[4])
	}
	if got, err := m.Decode(score); err != nil || got != s {
		t.Errorf("Decode = %+v, %v; want %+v", got, err, s)
	}
}

func TestMeetingEncodeRange(t *testing.T) {
	m := legacyMeeting(DefaultEpoch)
	epoch := DefaultEpoch.UnixMilli()
	last := epoch + 1<<38 - 1 // newest event time the window holds
	ok := MemberScore{Audio: 1, Volume: 500, Video: 1, Role: RoleGuest, TS: epoch + 1000}
	with := func(f func(*MemberScore)) MemberScore {
		s := ok
		f(&s)
		return s
	}
	tests := []struct {
		name      string
		s         MemberScore
		wantRange *RangeError // for a *RangeError
		want      string      // for another error; both empty: no error
	}{
		{"audio max", with(func(s *MemberScore) { s.Audio = 1 }), nil, ""},
		{"audio max+1", with(func(s *MemberScore) { s.Audio = 2 }), &RangeError{"audio", 2, 1}, ""},
		{"audio 255", with(func(s *MemberScore) { s.Audio = 255 }), &RangeError{"audio", 255, 1}, ""},
		{"volume max", with(func(s *MemberScore) { s.Volume = 999 }), nil, ""},
		{"volume max+1", with(func(s *MemberScore) { s.Volume = 1000 }), &RangeError{"volume", 1000, 999}, ""},
		{"volume 1023 fits the bits", with(func(s *MemberScore) { s.Volume = 1023 }), &RangeError{"volume", 1023, 999}, ""},
		{"volume 1024", with(func(s *MemberScore) { s.Volume = 1024 }), &RangeError{"volume", 1024, 999}, ""},
		{"video max", with(func(s *MemberScore) { s.Video = 1 }), nil, ""},
		{"video max+1", with(func(s *MemberScore) { s.Video = 2 }), &RangeError{"video", 2, 1}, ""},
		{"role student", with(func(s *MemberScore) { s.Role = RoleStudent }), nil, ""},
		{"role max (host)", with(func(s *MemberScore) { s.Role = RoleHost }), nil, ""},
		{"role max+1 (broadcast_control)", with(func(s *MemberScore) { s.Role = RoleBroadcastControl }), nil, "role broadcast_control (5) is not ranked"},
		{"role assistant", with(func(s *MemberScore) { s.Role = RoleAssistant }), nil, "role assistant (7) is not ranked"},
		{"role 8 fits no role", with(func(s *MemberScore) { s.Role = 8 }), nil, "role unknown (8) is not ranked"},
		{"role zero", with(func(s *MemberScore) { s.Role = 0 }), nil, "role unknown (0) is not ranked"},
		{"time at the epoch", with(func(s *MemberScore) { s.TS = epoch }), nil, ""},
		{"time max", with(func(s *MemberScore) { s.TS = last }), nil, ""},
		{"time max+1", with(func(s *MemberScore) { s.TS = last + 1 }), &RangeError{"time", 1 << 38, 1<<38 - 1}, ""},
		{"time before the epoch", with(func(s *MemberScore) { s.TS = epoch - 1 }), nil, "before the score epoch 2025-01-01T00:00:00Z"},
		{"time zero", with(func(s *MemberScore) { s.TS = 0 }), nil, "before the score epoch"},
		{"time MinInt64", with(func(s *MemberScore) { s.TS = math.MinInt64 }), nil, "before the score epoch"},
		{"time MaxInt64", with(func(s *MemberScore) { s.TS = math.MaxInt64 }), &RangeError{"time", uint64(math.MaxInt64 - epoch), 1<<38 - 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			score, err := m.Encode(tt.s)
			switch {
			case tt.wantRange != nil:
				var re *RangeError
				if !errors.As(err, &re) || *re != *tt.wantRange {
					t.Fatalf("Encode(%+v) = %v, %v; want %v", tt.s, score, err, tt.wantRange)
				}
			case tt.want != "":
				var re *RangeError
				if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Encode(%+v) = %v, %v; want error containing %q", tt.s, score, err, tt.want)
				}
			default:
				if err != nil {
					t.Fatalf("Encode(%+v): %v", tt.s, err)
				}
				got, err := m.Decode(score)
				if err != nil || got != tt.s {
					t.Fatalf("Decode(Encode(%+v)) = %+v, %v", tt.s, got, err)
				}
			}
		})
	}
}

// TestMeetingCheckTime: CheckTime refuses exactly the event times Encode
// refuses, under any rules.
func TestMeetingCheckTime(t *testing.T) {
	epoch := DefaultEpoch.UnixMilli()
	last := epoch + 1<<38 - 1
	for _, m := range []*Meeting{legacyMeeting(DefaultEpoch), NewMeeting(DefaultEpoch)} {
		for _, tt := range []struct {
			ts int64
			ok bool
		}{{epoch, true}, {last, true}, {epoch + 1000, true}, {epoch - 1, false}, {last + 1, false}, {0, false}, {math.MaxInt64, false}} {
			err := m.CheckTime(tt.ts)
			if (err == nil) != tt.ok {
				t.Errorf("CheckTime(%d) = %v, want ok %v", tt.ts, err, tt.ok)
			}
			if _, encErr := m.Encode(MemberScore{Role: RoleHost, TS: tt.ts}); fmt.Sprint(encErr) != fmt.Sprint(err) {
				t.Errorf("CheckTime(%d) = %v, Encode's error %v", tt.ts, err, encErr)
			}
		}
	}
}

func TestMeetingDecodeErrors(t *testing.T) {
	m := legacyMeeting(DefaultEpoch)
	raw := func(vals ...uint64) float64 {
		t.Helper()
		s, err := m.Layout().Encode(vals...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		name  string
		score float64
		want  string
	}{
		{"NaN", math.NaN(), "not a non-negative number"},
		{"negative", -1, "not a non-negative number"},
		{"fraction", raw(0, 5, 1, 4, 99) + 0.5, "not an integer"},
		{"2^53", 1 << 53, "not below 2^53"},
		{"volume 1000", raw(0, 1000, 0, 1, 0), "volume 1000 above 999"},
		{"volume 1023", raw(1, 1023, 1, 4, 1), "volume 1023 above 999"},
		{"role 0", raw(1, 10, 1, 0, 1), "role 0 is not ranked"},
		{"role 5", raw(1, 10, 1, 5, 1), "role 5 is not ranked"},
		{"role 7", raw(1, 10, 1, 7, 1), "role 7 is not ranked"},
		{"zero score has role 0", 0, "role 0 is not ranked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Decode(tt.score)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode(%v) = %+v, %v; want error containing %q", tt.score, got, err, tt.want)
			}
			if got != (MemberScore{}) {
				t.Fatalf("Decode(%v) returned %+v with its error", tt.score, got)
			}
		})
	}
}

// compareMembers orders member scores as docs/DESIGN.md §4 ranks them: audio on,
// louder, video on, higher role, newer event time.
func compareMembers(a, b MemberScore) int {
	return cmp.Or(
		cmp.Compare(a.Audio, b.Audio),
		cmp.Compare(a.Volume, b.Volume),
		cmp.Compare(a.Video, b.Video),
		cmp.Compare(a.Role, b.Role),
		cmp.Compare(a.TS, b.TS),
	)
}

// randomMember returns a valid member score, with edge values often, for a
// meeting whose epoch is epoch (Unix ms).
func randomMember(r *rand.Rand, epoch int64) MemberScore {
	pick := func(max uint64) uint64 {
		switch r.IntN(6) {
		case 0:
			return 0
		case 1:
			return max
		case 2:
			return max - 1
		}
		return r.Uint64N(max + 1)
	}
	return MemberScore{
		Audio:  uint8(r.IntN(2)),
		Volume: uint16(pick(MaxVolume)),
		Video:  uint8(r.IntN(2)),
		Role:   RoleStudent + Role(r.IntN(4)),
		TS:     epoch + int64(pick(1<<38-1)),
	}
}

func TestMeetingOrderProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 2025))
	m := legacyMeeting(DefaultEpoch)
	epoch := DefaultEpoch.UnixMilli()
	for i := range 50000 {
		a := randomMember(r, epoch)
		b := randomMember(r, epoch)
		if i%2 == 1 {
			// Share every field but one, which differs by the smallest step.
			b = a
			switch r.IntN(3) {
			case 0:
				b.TS = min(a.TS+1, epoch+1<<38-1)
			case 1:
				b.Volume = min(a.Volume+1, MaxVolume)
			default:
				b.Role = min(a.Role+1, RoleHost)
			}
		}
		sa, err := m.Encode(a)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", a, err)
		}
		sb, err := m.Encode(b)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", b, err)
		}
		if got, want := cmp.Compare(sa, sb), compareMembers(a, b); got != want {
			t.Fatalf("compare(Encode(%+v), Encode(%+v)) = %d, want %d", a, b, got, want)
		}
		if got, err := m.Decode(sa); err != nil || got != a {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", a, got, err)
		}
	}
}

func TestMeetingSeedOrder(t *testing.T) {
	// Seed 003's rule: audio on beats any volume, volume beats video, video
	// beats role, role beats time.
	m := legacyMeeting(DefaultEpoch)
	t0 := DefaultEpoch.UnixMilli()
	ranked := []MemberScore{ // best first
		{Audio: 1, Volume: 0, Video: 0, Role: RoleStudent, TS: t0},
		{Audio: 0, Volume: 999, Video: 1, Role: RoleHost, TS: t0 + 1<<38 - 1},
		{Audio: 0, Volume: 998, Video: 1, Role: RoleHost, TS: t0 + 1<<38 - 1},
		{Audio: 0, Volume: 998, Video: 0, Role: RoleHost, TS: t0 + 1<<38 - 1},
		{Audio: 0, Volume: 998, Video: 0, Role: RoleCohost, TS: t0 + 1<<38 - 1},
		{Audio: 0, Volume: 998, Video: 0, Role: RoleCohost, TS: t0 + 1},
		{Audio: 0, Volume: 998, Video: 0, Role: RoleCohost, TS: t0},
		{Audio: 0, Volume: 0, Video: 0, Role: RoleStudent, TS: t0},
	}
	prev := math.Inf(1)
	for _, s := range ranked {
		score, err := m.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if !(score < prev) {
			t.Fatalf("%+v scores %v, not below the member ranked above it (%v)", s, score, prev)
		}
		prev = score
	}
}

// legacyMeeting is the meeting codec of LegacyRules (audio, volume, video,
// role; 1 ms time), the layout of rostrum's scores before ranking rules.
func legacyMeeting(epoch time.Time) *Meeting {
	m, err := NewMeetingRules(epoch, LegacyRules())
	if err != nil {
		panic(err)
	}
	return m
}
