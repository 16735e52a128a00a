package processor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// ackRecorder is the Redis sink, recording the acknowledgements each apply
// carries and the rooms it applies.
type ackRecorder struct {
	*sink.Store
	mu    sync.Mutex
	calls []ackCall
}

type ackCall struct {
	rooms map[string]bool
	acks  []ranking.Ack
}

func (r *ackRecorder) record(rooms []ranking.RoomUpdate, acks []ranking.Ack) {
	c := ackCall{rooms: map[string]bool{}, acks: append([]ranking.Ack(nil), acks...)}
	for _, u := range rooms {
		c.rooms[u.Room] = true
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

func (r *ackRecorder) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	r.record(rooms, acks)
	return r.Store.Apply(ctx, rooms, acks)
}

func (r *ackRecorder) ApplyMerge(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep) ([]ranking.RoomState, []ranking.Merged, error) {
	r.record(rooms, acks)
	return r.Store.ApplyMerge(ctx, rooms, acks, merge)
}

// TestAcksRideInTheRoomsNextApply: with a long AckDelay, the acknowledgement
// of a published output goes with an apply of its own room (where it rides in
// the room's script) or with a flush that applies no room (the processor
// polled nothing, or stopped), never with an apply of other rooms; after the
// stop no output is left pending in Redis, and the outputs are those of the
// model (TestCrashRestart covers crashes with acknowledgements waiting: the
// output is published again, identical).
func TestAcksRideInTheRoomsNextApply(t *testing.T) {
	w := newWorld(t, e2eTrace(5, 6000))
	produced := w.produce(300, 20*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	rc := redis.NewClient(&redis.Options{Addr: w.redis.Addr})
	defer rc.Close()
	s, err := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	if err != nil {
		t.Fatal(err)
	}
	rec := &ackRecorder{Store: s}
	log, err := wal.Open(t.TempDir(), wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	p, err := processor.New(ctx, processor.Config{
		Brokers: w.kafka.Seeds, Env: env, MaxPollRecords: 200,
		Decode:   codec.DecodeConfig{MaxFutureSkew: time.Minute},
		AckDelay: time.Minute,
	}, rec, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	w.waitProduced(produced)
	w.waitCaughtUp(2 * time.Minute)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	w.check()

	rode, flushed := 0, 0
	for i, c := range rec.calls {
		for _, a := range c.acks {
			switch {
			case len(c.rooms) == 0:
				flushed++
			case c.rooms[a.Room]:
				rode++
			default:
				t.Fatalf("apply %d carried the acknowledgement of room %s seq %d with %d other rooms: it waited less than AckDelay", i, a.Room, a.Seq, len(c.rooms))
			}
		}
	}
	if rode == 0 || flushed == 0 {
		t.Fatalf("%d acknowledgements rode in their room's apply, %d were flushed: want both", rode, flushed)
	}
	ctx = context.Background()
	for _, room := range w.model.Rooms() {
		if n, err := rc.HExists(ctx, sink.RoomKeys(env, room).Stable, "pending").Result(); err != nil || n {
			t.Fatalf("room %s: output still pending after the stop (%v)", room, err)
		}
	}
	t.Logf("%d acknowledgements rode in their room's apply, %d were flushed while idle or at the stop", rode, flushed)
}
