package sink_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
)

// BenchmarkApplySmallFold measures what a room costs Redis in the common
// apply at a moderate event rate: the room is in the state cache, and the
// batch brings it one or two members' updates from one partition (a batch of
// 300 rooms out of 5,000 rooms of 100 members). Besides the client's time
// per room it reports Redis's: redis-cpu-µs/room is the CPU time of the
// Redis process (INFO cpu: the scripts, and reading and parsing the calls
// and writing the replies), redis-µs/room the time Redis spent running the
// scripts (commandstats, EVALSHA), redis-cmds/room the commands Redis ran
// per room (scripts and the commands inside them).
//
// The sub-benchmarks send 1 room per script call and
// sink.DefaultRoomsPerScript, with the stable step in the apply
// (ApplyMerge, as the processor calls it: merge=…) or without (Apply).
func BenchmarkApplySmallFold(b *testing.B) {
	for _, merge := range []bool{false, true} {
		for _, per := range []int{1, sink.DefaultRoomsPerScript} {
			b.Run(fmt.Sprintf("merge=%t/rooms-per-script=%d", merge, per), func(b *testing.B) { benchSmallFold(b, per, merge) })
		}
	}
}

// benchStep is a stable step as cheap as it can be that still stores what
// the processor's would: the raw top as the list, a state when the list
// changed, and an output record of a realistic size.
func benchStep(st *ranking.RoomState) (ranking.StableUpdate, bool, error) {
	list := make([]string, len(st.Top))
	for i, m := range st.Top {
		list[i] = m.UserID
	}
	if slices.Equal(list, st.Stable) {
		return ranking.StableUpdate{}, false, nil
	}
	out := fmt.Appendf(nil, `{"room_id":%q,"seq":%d,"top":%q,"ts":0}`, st.Room, st.Seq+1, list)
	return ranking.StableUpdate{Room: st.Room, PrevSeq: st.Seq, Version: st.Version, List: list,
		PrevState: st.HState, State: "h" + list[0], Out: out}, true, nil
}

func benchSmallFold(b *testing.B, perScript int, merge bool) {
	const rooms, members, perBatch = 5000, 100, 300
	ctx := context.Background()
	c := testenv.StartRedis(b).Client()
	s, err := sink.New(c, sink.Config{Env: "bench", CacheMembers: sink.DefaultCacheMembers, TopN: 7, RoomsPerScript: perScript})
	if err != nil {
		b.Fatal(err)
	}
	ts := codec.DefaultEpoch.UnixMilli() + 1_000_000
	offset := int64(0)
	update := func(room int, users []int, part int32) ranking.RoomUpdate {
		offset++
		p := ranking.Part{Topic: "bench.callbacks.rtc", Partition: part, Last: offset}
		for _, u := range users {
			ts++
			ev := codec.Event{Type: codec.TypeVolume, Value: int64(u % 256), TS: ts}
			var st ranking.MemberState
			st.Apply(&ev)
			ev = codec.Event{Type: codec.TypeJoin, TS: ts}
			st.Apply(&ev)
			p.Members = append(p.Members, ranking.MemberUpdate{UserID: "u-" + strconv.Itoa(u), State: st})
		}
		return ranking.RoomUpdate{Room: fmt.Sprintf("r-%05d", room), Parts: []ranking.Part{p}}
	}
	// Fill: every room's members, each room read then written, so the
	// cache holds every room.
	for r0 := 0; r0 < rooms; r0 += 500 {
		var batch []ranking.RoomUpdate
		for r := r0; r < r0+500; r++ {
			users := make([]int, members)
			for i := range users {
				users[i] = i
			}
			batch = append(batch, update(r, users, int32(r%3)))
		}
		if _, err := s.Apply(ctx, batch, nil); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	batches := make([][]ranking.RoomUpdate, 64)
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	cpu0 := redisCPU(b, c)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		batch := batches[n%len(batches)][:0]
		for range perBatch {
			r := rng.IntN(rooms)
			batch = append(batch, update(r, []int{rng.IntN(members), rng.IntN(members)}[:1+rng.IntN(2)], int32(r%3)))
		}
		batches[n%len(batches)] = batch
		var err error
		if merge {
			_, _, err = s.ApplyMerge(ctx, batch, nil, ranking.StepFunc(benchStep))
		} else {
			_, err = s.Apply(ctx, batch, nil)
		}
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.StopTimer()
	cpu := redisCPU(b, c) - cpu0
	usec, calls, cmds := commandStats(b, c)
	b.ReportMetric(cpu*1e6/float64(n*perBatch), "redis-cpu-µs/room")
	b.ReportMetric(float64(usec)/float64(n*perBatch), "redis-µs/room")
	b.ReportMetric(float64(cmds)/float64(n*perBatch), "redis-cmds/room")
	b.ReportMetric(float64(calls)/float64(n*perBatch), "scripts/room")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n*perBatch), "µs/room")
	if st := s.CacheStats(); st.Fast == 0 {
		b.Fatalf("no fast applies: %+v", st)
	}
}

// commandStats returns the microseconds and calls of EVALSHA and the calls
// of every command since the last CONFIG RESETSTAT.
func commandStats(b *testing.B, c *redis.Client) (evalUsec, evalCalls, cmds int64) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		var calls, usec int64
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			x, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				calls = x
			case "usec":
				usec = x
			}
		}
		cmds += calls
		if name == "cmdstat_evalsha" {
			evalUsec, evalCalls = usec, calls
		}
	}
	return evalUsec, evalCalls, cmds
}

// redisCPU returns the Redis process's CPU time so far, in seconds (INFO
// cpu, used_cpu_user + used_cpu_sys).
func redisCPU(b *testing.B, c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var cpu float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			x, _ := strconv.ParseFloat(v, 64)
			cpu += x
		}
	}
	return cpu
}
