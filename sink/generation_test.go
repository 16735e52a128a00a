package sink_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
)

// afterPipeline is a go-redis hook that runs fn once, right after the next
// pipeline of the client it is added to has run: a fault struck between two
// round trips of one Apply.
type afterPipeline struct {
	armed atomic.Bool
	fn    func()
}

func (h *afterPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *afterPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if h.armed.CompareAndSwap(true, false) {
			h.fn()
		}
		return err
	}
}

// TestNoStateFromAnEmptiedRedis: an Apply whose room scripts ran (in part)
// after Redis lost its data returns ranking.ErrRedisReset and no state,
// also when the generation marker it read earlier in the same Apply was
// still the adopted one. A state read from the emptied Redis has no stable
// list and seq 0: the processor would store its next list as seq 1 and
// publish it, a second seq 1 with other content, before any rebuild seeded
// the seqs from the output topic.
//
// Two ways an Apply runs room scripts after its first reply:
//
//   - restart: the cached plan of a room is refused (another processor
//     wrote the room), so the room is read again in a second round trip;
//     redis-server restarts empty between the two.
//   - noscript: Redis lost its scripts (a restart with its data, SCRIPT
//     FLUSH), so the scripts run again in a second round trip after loading
//     them; the data is flushed between the two.
func TestNoStateFromAnEmptiedRedis(t *testing.T) {
	join := func(user string, offset int64) ranking.RoomUpdate {
		return update("r1", user, 0, offset, codec.Event{Type: codec.TypeJoin, TS: base + offset})
	}
	for _, tc := range []struct {
		name string
		// before runs before the Apply; fault runs between its round trips
		before func(t *testing.T, rdb *testenv.Redis, other *sink.Store)
		fault  func(t *testing.T, rdb *testenv.Redis)
		// members the Apply leaves in the emptied Redis
		members []string
	}{
		{"restart",
			func(t *testing.T, _ *testenv.Redis, other *sink.Store) {
				// Another writer moves the room's state token: the next
				// fast plan of the first sink is refused.
				if _, err := other.Apply(context.Background(), []ranking.RoomUpdate{join("b", 2)}, nil); err != nil {
					t.Fatal(err)
				}
			},
			func(_ *testing.T, rdb *testenv.Redis) { rdb.Restart(false) },
			// The room was read from the emptied Redis: the marker read
			// after the read stopped the Apply before anything was
			// written.
			nil},
		{"noscript",
			func(t *testing.T, rdb *testenv.Redis, _ *sink.Store) {
				if err := rdb.Client().ScriptFlush(context.Background()).Err(); err != nil {
					t.Fatal(err)
				}
			},
			func(t *testing.T, rdb *testenv.Redis) {
				if err := rdb.Client().FlushAll(context.Background()).Err(); err != nil {
					t.Error(err)
				}
			},
			// The fast script, run again after NOSCRIPT, found the room's
			// token gone and wrote nothing; the marker read after it
			// stopped the Apply before a second round trip.
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rdb := testenv.StartRedis(t)
			c := rdb.Client()
			hook := &afterPipeline{}
			c.AddHook(hook)
			s := newSink(t, c)
			gen, err := s.EnsureGeneration(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s.AdoptGeneration(gen)
			if _, err := s.Apply(ctx, []ranking.RoomUpdate{join("a", 1)}, nil); err != nil { // read and written: cached
				t.Fatal(err)
			}
			st, err := s.Read(ctx, []string{"r1"})
			if err != nil {
				t.Fatal(err)
			}
			ok, err := s.StoreStable(ctx, []ranking.StableUpdate{{Room: "r1", PrevSeq: st[0].Seq, Version: st[0].Version,
				List: []string{"a"}, Out: []byte("seq 1")}})
			if err != nil || !ok[0] {
				t.Fatalf("store seq 1: %v %v", ok, err)
			}
			tc.before(t, rdb, newSink(t, rdb.Client()))

			hook.fn = func() { tc.fault(t, rdb) }
			hook.armed.Store(true)
			states, err := s.Apply(ctx, []ranking.RoomUpdate{join("c", 3)}, nil)
			if hook.armed.Load() {
				t.Fatal("the fault did not strike")
			}
			if !errors.Is(err, ranking.ErrRedisReset) {
				t.Fatalf("apply across the data loss: %+v, %v; want ErrRedisReset and no state", states, err)
			}
			k := sink.RoomKeys("test", "r1")
			if got := c.HKeys(ctx, k.Members).Val(); !slices.Equal(got, tc.members) {
				t.Fatalf("members after the apply: %v, want %v", got, tc.members)
			}
			if seq := c.HGet(ctx, k.Stable, "seq").Val(); seq != "" {
				t.Fatalf("stable seq after the apply: %q, want none", seq)
			}
		})
	}
}
