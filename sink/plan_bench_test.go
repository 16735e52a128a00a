package sink

import (
	"fmt"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// BenchmarkPlanRoom measures the state cache's apply plan of a room of 100
// members: 8 members changed, spread over 3 topic-partition parts, the way a
// meeting batch touches a room, with the stable step taken. An operation
// plans 64 such rooms (the same room again) with one arena, as an apply
// does; allocs/room is what each room costs beyond the arena.
func BenchmarkPlanRoom(b *testing.B) {
	r, err := New(nil, Config{Env: "bench", CacheMembers: DefaultCacheMembers})
	if err != nil {
		b.Fatal(err)
	}
	ts := codec.DefaultEpoch.UnixMilli() + 1_000_000
	cr := &cachedRoom{roomModel: newRoomModel(100)}
	cr.stable.known = true
	for i := 0; i < 100; i++ {
		s := ranking.MemberState{Presence: ranking.PresenceIn, PresenceTS: ts, MaxTS: ts}
		score, _ := scoreOf(&s, r.opt.Meeting)
		cr.add(fmt.Sprintf("u-%d", i), s, score)
	}
	u := ranking.RoomUpdate{Room: "r-1"}
	for p := 0; p < 3; p++ {
		part := ranking.Part{Topic: "bench.callbacks.rtc", Partition: int32(p), Last: 1}
		for k := 0; k < 4; k++ {
			ev := codec.Event{Type: codec.TypeVolume, Value: int64(100 * k), TS: ts + int64(p*10+k)}
			var s ranking.MemberState
			s.Apply(&ev)
			part.Members = append(part.Members, ranking.MemberUpdate{UserID: fmt.Sprintf("u-%d", (p*3+k)%100), State: s})
		}
		u.Parts = append(u.Parts, part)
	}
	merge := ranking.StepFunc(func(*ranking.RoomState) (ranking.StableUpdate, bool, error) {
		return ranking.StableUpdate{}, false, nil
	})
	const perOp = 64
	rooms := make([]ranking.RoomUpdate, perOp)
	for i := range rooms {
		rooms[i] = u
	}
	b.ReportAllocs()
	for b.Loop() {
		var ar arena
		ar.init(rooms, make([]bool, len(rooms)))
		for i := range rooms {
			cr.token = "t"
			if _, err := r.planRoom(cr, &rooms[i], nil, &ar, merge, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	var ar arena
	ar.init(rooms, make([]bool, len(rooms)))
	allocs := testing.AllocsPerRun(20, func() {
		for i := range rooms {
			cr.token = "t"
			if _, err := r.planRoom(cr, &rooms[i], nil, &ar, merge, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(allocs/perOp, "allocs/room")
}
