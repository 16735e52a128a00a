package sink_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/testenv"
	"github.com/rostrumhq/rostrum/sink"
)

// TestStateCacheMatchesScripts is the state cache's differential test. Two
// processors with the cache write one Redis, a sink without it writes
// another, all with the same batches: random events over several parts,
// users beyond the members cap, redelivered batches, stable lists stored,
// rooms expiring. Every RoomState returned and every key stored must be the
// same on both sides, while the cached side really takes its fast path and
// also falls back when the other processor wrote first.
//
// The capped run keeps rooms small (14 users, a cap of 10); the other
// lets rooms grow past the size up to which the sink ranks the top from
// its cache, so the script's top list is compared too.
func TestStateCacheMatchesScripts(t *testing.T) {
	t.Run("capped", func(t *testing.T) { testStateCache(t, 10, 14) })
	t.Run("large", func(t *testing.T) { testStateCache(t, 0, 400) })
}

func testStateCache(t *testing.T, maxMembers, users int) {
	ctx := context.Background()
	ca := testenv.StartRedis(t).Client()
	cb := testenv.StartRedis(t).Client()
	opts := sink.Options{Env: "test", TopN: 3, RoomTTL: time.Hour, MaxMembers: maxMembers}
	mk := func(c redis.UniversalClient, cache int) *sink.Redis {
		o := opts
		o.CacheMembers = cache
		s, err := sink.New(c, o)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, other := mk(ca, 0), mk(ca, 0)
	ref := mk(cb, -1)

	r := rand.New(rand.NewPCG(7, 7))
	const rooms, partitions = 6, 3
	var offsets [partitions]int64
	var past [][]sink.RoomUpdate
	var acks []sink.Ack
	roomName := func(i int) string { return fmt.Sprintf("room-%d", i) }
	for step := 0; step < 600; step++ {
		var batch []sink.RoomUpdate
		if len(past) > 0 && r.IntN(10) == 0 {
			batch = past[r.IntN(len(past))] // a redelivery: the watermarks skip it
		} else {
			for room := 0; room < rooms; room++ {
				if r.IntN(2) == 0 {
					continue
				}
				u := sink.RoomUpdate{Room: roomName(room)}
				for part := 0; part < partitions; part++ {
					if r.IntN(2) == 0 {
						continue
					}
					offsets[part] += 1 + r.Int64N(3)
					p := sink.Part{Topic: "test.callbacks.rtc", Partition: int32(part), Last: offsets[part]}
					fold := map[string]*sink.MemberState{}
					var order []string
					for e := 0; e < 1+r.IntN(users/2); e++ {
						ev := randomEvent(r, u.Room)
						ev.UserID = fmt.Sprintf("u%d", r.IntN(users))
						ev.TS += int64(step) * 10
						if fold[ev.UserID] == nil {
							fold[ev.UserID] = new(sink.MemberState)
							order = append(order, ev.UserID)
						}
						fold[ev.UserID].Apply(&ev)
					}
					for _, user := range order {
						p.Members = append(p.Members, sink.MemberUpdate{UserID: user, State: *fold[user]})
					}
					u.Parts = append(u.Parts, p)
				}
				if len(u.Parts) > 0 {
					batch = append(batch, u)
				}
			}
			past = append(past, batch)
		}
		w := a
		if r.IntN(5) == 0 {
			w = other
		}
		got, err := w.Apply(ctx, batch, acks)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Apply(ctx, batch, acks)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !reflect.DeepEqual(norm(got[i]), norm(want[i])) {
				t.Fatalf("step %d, %s:\ncached %+v\nscript %+v", step, batch[i].Room, got[i], want[i])
			}
		}
		// Store the raw top as the stable list now and then, so that the
		// scores of stable members outside the top are compared too.
		var ups []sink.StableUpdate
		for _, st := range want {
			if r.IntN(3) == 0 {
				list := make([]string, 0, len(st.Top)+1)
				for _, m := range st.Top {
					list = append(list, m.UserID)
				}
				list = append(list, "u13") // often not ranked, or not in the top
				ups = append(ups, sink.StableUpdate{Room: st.Room, PrevSeq: st.Seq, Version: st.Version, List: list, Out: []byte("out")})
			}
		}
		if len(ups) > 0 {
			okA, errA := w.StoreStable(ctx, ups)
			okB, errB := ref.StoreStable(ctx, ups)
			if errA != nil || errB != nil || !reflect.DeepEqual(okA, okB) {
				t.Fatalf("step %d: store %v %v / %v %v", step, okA, errA, okB, errB)
			}
			// Most stored outputs are acknowledged with the next batch,
			// some with a seq that is not the pending one.
			acks = acks[:0]
			for i, u := range ups {
				if okB[i] && r.IntN(4) != 0 {
					acks = append(acks, sink.Ack{Room: u.Room, Seq: u.PrevSeq + 1 - int64(r.IntN(2))})
				}
			}
		}
		if r.IntN(50) == 0 { // a room expires on both sides
			k := sink.RoomKeys("test", roomName(r.IntN(rooms)))
			for _, c := range []*redis.Client{ca, cb} {
				if err := c.Del(ctx, k.Members, k.Ranking, k.Stable, k.Watermarks).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for room := 0; room < rooms; room++ {
		if da, db := dumpRoom(t, ca, roomName(room)), dumpRoom(t, cb, roomName(room)); !reflect.DeepEqual(da, db) {
			t.Fatalf("%s stored:\ncached %v\nscript %v", roomName(room), da, db)
		}
	}
	st := a.CacheStats()
	t.Logf("cache: %+v", st)
	if st.Fast == 0 || st.Stale == 0 || st.Full == 0 {
		t.Fatalf("the test did not exercise every path: %+v", st)
	}
	if s := ref.CacheStats(); s != (sink.CacheStats{}) {
		t.Fatalf("disabled cache counted %+v", s)
	}
}

// norm makes two RoomStates comparable: nil and empty slices are alike.
func norm(s sink.RoomState) sink.RoomState {
	if len(s.Stable) == 0 {
		s.Stable = nil
	}
	if len(s.StableScores) == 0 {
		s.StableScores = nil
	}
	if len(s.Refused) == 0 {
		s.Refused = nil
	}
	if len(s.Top) == 0 {
		s.Top = nil
	}
	return s
}

// dumpRoom returns every stored field of a room, except the state token.
func dumpRoom(t *testing.T, c *redis.Client, room string) map[string]any {
	t.Helper()
	ctx := context.Background()
	k := sink.RoomKeys("test", room)
	stable := c.HGetAll(ctx, k.Stable).Val()
	delete(stable, "mv")
	return map[string]any{
		"members":    c.HGetAll(ctx, k.Members).Val(),
		"ranking":    c.ZRangeWithScores(ctx, k.Ranking, 0, -1).Val(),
		"stable":     stable,
		"watermarks": c.HGetAll(ctx, k.Watermarks).Val(),
	}
}
