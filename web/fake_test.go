package web_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// fakeSource serves fixed rooms, or rooms computed per call.
type fakeSource struct {
	rooms      []ranking.RoomSummary
	view       func(room string) (ranking.RoomView, error)
	calls      atomic.Int64 // RoomView calls
	roomsCalls atomic.Int64 // Rooms calls
	// roomsSeq, when set, makes every room's Seq the number of Rooms calls,
	// so each read of the list differs.
	roomsSeq bool
}

func (f *fakeSource) Rooms(ctx context.Context, max int) ([]ranking.RoomSummary, error) {
	n := f.roomsCalls.Add(1)
	out := slices.Clone(f.rooms[:min(max, len(f.rooms))])
	if f.roomsSeq {
		for i := range out {
			out[i].Seq = n
		}
	}
	return out, nil
}

func (f *fakeSource) RoomView(ctx context.Context, room string) (ranking.RoomView, error) {
	f.calls.Add(1)
	return f.view(room)
}

var meeting = codec.NewMeeting(codec.DefaultEpoch)

var now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).UnixMilli()

func member(user string, audio uint8, volume uint16, video uint8, role codec.Role, ts int64) ranking.MemberView {
	score, err := meeting.Encode(codec.MemberScore{Audio: audio, Volume: volume, Video: video, Role: role, TS: ts})
	if err != nil {
		panic(err)
	}
	return ranking.MemberView{UserID: user, Audio: audio, Volume: volume, Video: video, Role: role.String(), Score: score, TS: ts}
}

// byScore returns ms sorted best first, as a raw top list.
func byScore(ms []ranking.MemberView) []ranking.MemberView {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b ranking.MemberView) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out
}

// meetingRoom is a realistic room: seven members in the stable list, one of
// them just pushed out of the raw top-7 by a newcomer.
func meetingRoom() ranking.RoomView {
	stable := []ranking.MemberView{
		member("host.wang", 1, 640, 1, codec.RoleHost, now-1200),
		member("li.na", 1, 812, 1, codec.RoleGuest, now-300),
		member("cohost-zhao", 1, 35, 1, codec.RoleCohost, now-5400),
		member("u-1042", 0, 0, 1, codec.RoleStudent, now-61000),
		member("chen.yu", 1, 402, 0, codec.RoleStudent, now-800),
		member("guest-omar", 0, 0, 1, codec.RoleGuest, now-42000),
		member("sara.k", 1, 120, 1, codec.RoleStudent, now-2500),
	}
	raw := byScore(append(slices.Clone(stable[:6]), member("u-2210", 1, 230, 1, codec.RoleStudent, now-100)))
	return ranking.RoomView{Room: "r-1001", Seq: 184, Stable: stable, Raw: raw, Members: 48}
}

func meetingRooms() []ranking.RoomSummary {
	return []ranking.RoomSummary{
		{Room: "r-1001", Seq: 184, Members: 48}, {Room: "r-2040", Seq: 97, Members: 31},
		{Room: "r-0007", Seq: 61, Members: 12}, {Room: "prod-tutoring-88", Seq: 23, Members: 9},
		{Room: "r-3300", Seq: 4, Members: 3},
	}
}

// rotatingSource serves one room whose seven members shift by one user on
// every read, so each read has a different stable list.
func rotatingSource() *fakeSource {
	f := &fakeSource{rooms: []ranking.RoomSummary{{Room: "spin", Seq: 1, Members: 12}}}
	f.view = func(room string) (ranking.RoomView, error) {
		if room != "spin" {
			return ranking.RoomView{}, ranking.ErrUnknownRoom
		}
		n := f.calls.Load()
		var stable []ranking.MemberView
		for i := range int64(7) {
			stable = append(stable, member(fmt.Sprintf("user-%d", n+i), uint8((n+i)%2), uint16(100*i), 1, codec.RoleStudent, now+n))
		}
		return ranking.RoomView{Room: room, Seq: n, Stable: stable, Raw: byScore(stable), Members: 12}, nil
	}
	return f
}
