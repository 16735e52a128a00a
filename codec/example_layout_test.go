package codec_test

import (
	"fmt"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

func ExampleNewLayout() {
	// Rank by level (higher first), then by deaths (fewer first).
	l, err := codec.NewLayout(
		codec.Field{Name: "level", Bits: 8},
		codec.Field{Name: "deaths", Bits: 16, Dir: codec.LowerFirst},
	)
	if err != nil {
		panic(err)
	}
	fmt.Println(l)

	a, _ := l.Encode(10, 3)
	b, _ := l.Encode(10, 7)
	c, _ := l.Encode(11, 500)
	fmt.Println(a > b, c > a)

	vals, _ := l.Decode(a, nil)
	fmt.Println(vals)

	_, err = l.Encode(256, 0)
	fmt.Println(err)

	_, err = codec.NewLayout(
		codec.Field{Name: "score", Bits: 23},
		codec.Field{Name: "time", Bits: 40},
	)
	fmt.Println(err)
	// Output:
	// level:8 deaths:16(lower-first) (24 bits)
	// true true
	// [10 3]
	// codec: field level: value 256 out of range 0..255
	// codec: layout needs 63 bits, more than the 53 a float64 score holds exactly
}

func ExampleNewMeeting() {
	m := codec.NewMeeting(codec.DefaultEpoch)
	fmt.Println(m.Layout())
	fmt.Println("window ends", m.Epoch().Add(codec.MeetingWindow).Format(time.RFC3339))

	ts := time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC).UnixMilli()
	speaker := codec.MemberScore{Audio: 1, Volume: 512, Video: 1, Role: codec.RoleGuest, TS: ts}
	host := codec.MemberScore{Audio: 0, Volume: 0, Video: 1, Role: codec.RoleHost, TS: ts + 5000}

	s1, _ := m.Encode(speaker)
	s2, _ := m.Encode(host)
	fmt.Printf("%.0f %.0f %v\n", s1, s2, s1 > s2)

	back, _ := m.Decode(s1)
	fmt.Printf("%+v\n", back)

	_, err := m.Encode(codec.MemberScore{Volume: 1000, Role: codec.RoleStudent, TS: ts})
	fmt.Println(err)
	_, err = m.Encode(codec.MemberScore{Role: codec.RoleAssistant, TS: ts})
	fmt.Println(err)
	// Output:
	// spotlight:1 screen_share:1 audio:1 volume:10 video:1 role:3 time:36 (53 bits)
	// window ends 2033-09-17T10:58:26Z
	// 1689544064231296 831642922082 true
	// {Spotlight:0 ScreenShare:0 Audio:1 Volume:512 Video:1 Role:guest TS:1763726400000}
	// codec: field volume: value 1000 out of range 0..999
	// codec: role assistant (7) is not ranked; only roles 1..4 have a score
}

func ExampleNewFirstReached() {
	// A weekly board: totals up to 2^23-1; ties go to whoever reached the
	// total first, counted in ms since the start of the week (30 bits,
	// about 12.4 days).
	l, err := codec.NewFirstReached(23)
	if err != nil {
		panic(err)
	}
	fmt.Println(l)

	week := time.Date(2025, 11, 17, 0, 0, 0, 0, time.UTC)
	since := func(t time.Time) uint64 { return uint64(t.Sub(week).Milliseconds()) }
	early, _ := l.Encode(120, since(week.Add(2*time.Hour)))
	late, _ := l.Encode(120, since(week.Add(2*time.Hour+time.Millisecond)))
	more, _ := l.Encode(121, since(week.Add(6*24*time.Hour)))
	fmt.Println(early > late, more > early)

	vals, _ := l.Decode(late, nil)
	fmt.Println("total", vals[0], "reached", week.Add(time.Duration(vals[1])*time.Millisecond).Format(time.RFC3339Nano))
	// Output:
	// total:23 reached:30(lower-first) (53 bits)
	// true true
	// total 120 reached 2025-11-17T02:00:00.001Z
}

func ExampleParseRules() {
	rules, err := codec.ParseRules("screen_share, audio, volume")
	if err != nil {
		panic(err)
	}
	m, _ := codec.NewMeetingRules(codec.DefaultEpoch, rules)
	fmt.Println(m.Layout(), m.TimeUnit())

	_, err = codec.ParseRules("spotlight,mic")
	fmt.Println(err)
	_, err = codec.ParseRules("audio,volume,audio")
	fmt.Println(err)
	// Output:
	// screen_share:1 audio:1 volume:10 time:38 (50 bits) 1ms
	// unknown field "mic" (want spotlight, screen_share, audio, volume, video or role)
	// field "audio" is listed twice
}
