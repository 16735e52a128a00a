package processor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/stability"
	"github.com/rostrumhq/rostrum/wal"
)

// hystRoom is the room of the hysteresis tests.
const hystRoom = "r-hyst"

// hystWorld is a broker, a redis-server and the room's event clock.
type hystWorld struct {
	t      *testing.T
	kafka  *testenv.Kafka
	rc     *redis.Client
	topics processor.Topics
	t0     int64 // event time of the first event, Unix ms
}

func newHystWorld(t *testing.T) *hystWorld {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	r := testenv.StartRedis(t)
	// Event times an hour ago: every deadline is already past on the wall
	// clock, so the timer steps a due room on its next look, and what it
	// decides depends on event times alone.
	return &hystWorld{t: t, kafka: k, rc: r.Client(), topics: topics, t0: time.Now().Add(-time.Hour).UnixMilli()}
}

// start runs a processor with the hysteresis on a top-3 until the test ends
// or the returned stop is called.
func (w *hystWorld) start(dueInterval time.Duration) (p *processor.Processor, stop func()) {
	return w.startWith(dueInterval, nil)
}

// startWith is start with edit applied to the processor's configuration.
func (w *hystWorld) startWith(dueInterval time.Duration, edit func(*processor.Config)) (p *processor.Processor, stop func()) {
	t := w.t
	rc := w.rc
	store, err := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers, TopN: 3})
	if err != nil {
		t.Fatal(err)
	}
	log, err := wal.Open(t.TempDir(), wal.Config{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := processor.Config{Brokers: w.kafka.Seeds, Env: env, TopN: 3,
		KafkaOpts: testenv.FastGroupOpts(), Stable: processor.StableConfig{Dwell: time.Second, Grace: 3 * time.Second, Margin: 200, DueInterval: dueInterval}}
	if edit != nil {
		edit(&cfg)
	}
	p, err = processor.New(ctx, cfg, store, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		log.Close()
	}
	t.Cleanup(stop)
	return p, stop
}

// send produces one record of the room's events at t0+at ms; each event is
// "user type [value]".
func (w *hystWorld) send(at int64, events ...string) {
	var objs []string
	for _, e := range events {
		f := strings.Fields(e)
		o := fmt.Sprintf(`{"room_id":%q,"user_id":%q,"type":%q,"ts":%d`, hystRoom, f[0], f[1], w.t0+at)
		if len(f) == 3 {
			if f[1] == "role" {
				o += fmt.Sprintf(`,"value":%q`, f[2])
			} else {
				o += `,"value":` + f[2]
			}
		}
		objs = append(objs, o+"}")
	}
	w.kafka.Produce(w.topics.RTC, []byte(hystRoom), []byte("["+strings.Join(objs, ",")+"]"))
}

// waitOutput waits for the room's output with seq and returns its list and
// its ts relative to t0.
func (w *hystWorld) waitOutput(seq int64) (list []string, at int64) {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, r := range w.kafka.ReadAll(w.topics.TopN) {
			var o codec.Output
			if err := json.Unmarshal(r.Value, &o); err != nil {
				w.t.Fatal(err)
			}
			if o.Seq == seq {
				for _, m := range o.Top {
					list = append(list, m.UserID)
				}
				return list, o.TS - w.t0
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("no output with seq %d", seq)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// expect waits for output seq and requires its list and ts.
func (w *hystWorld) expect(seq int64, at int64, list ...string) {
	w.t.Helper()
	got, gotAt := w.waitOutput(seq)
	if !slices.Equal(got, list) || gotAt != at {
		w.t.Fatalf("seq %d: %v at t0+%d, want %v at t0+%d", seq, got, gotAt, list, at)
	}
}

// TestHysteresis drives one room through every rule of the hysteresis in
// the real pipeline: a challenger within the margin waits for its dwell and
// is promoted by the timer without any further event, at the deadline on
// the event clock; a challenger beyond the margin, a departure, a host, a
// mute and an excluded role act at once. Each step waits for its output, so
// batching cannot merge steps; nothing depends on how long anything takes.
func TestHysteresis(t *testing.T) {
	w := newHystWorld(t)
	p, _ := w.start(10 * time.Millisecond)

	w.send(0, "a audio 1", "a volume 500", "b audio 1", "b volume 400", "c audio 1", "c volume 300")
	w.expect(1, 0, "a", "b", "c")

	// d edges past c by less than the margin: it waits, and the timer
	// promotes it when its dwell ends, 1 s of event time later.
	w.send(100, "d audio 1", "d volume 350")
	w.expect(2, 1100, "a", "b", "d")
	if p.Stats().DueSteps.Load() == 0 {
		t.Fatal("seq 2 was not decided by the timer")
	}

	// e leads the weakest shown member out of the top (d, pushed out by e)
	// by more than the margin: at once.
	w.send(5000, "e audio 1", "e volume 900")
	w.expect(3, 5000, "a", "b", "e")
	// a leaves: its tile goes at once, d (back in the top-3) takes it.
	w.send(6000, "a leave")
	w.expect(4, 6000, "d", "b", "e")
	// f becomes host, ranks third, within the margin of d: a host never waits.
	w.send(7000, "f role host", "f audio 1", "f volume 380")
	w.expect(5, 7000, "f", "b", "e")
	// b mutes: audio ranks first, so b leaves at once; d takes the tile.
	w.send(8000, "b audio 0")
	w.expect(6, 8000, "f", "d", "e")
	// e's role becomes excluded: it leaves the ranking and the list at once.
	w.send(9000, "e role assistant")
	w.expect(7, 9000, "f", "d", "c")

	// Nothing is left waiting: no timer in the state (only the flags of
	// the listed members), no due entry.
	ctx := context.Background()
	h, err := w.rc.HGet(ctx, sink.RoomKeys(env, hystRoom).Stable, "h").Result()
	var hs stability.State
	if err != nil || hs.UnmarshalText([]byte(h)) != nil || !hs.Empty() || len(hs.Shown) != 3 {
		t.Fatalf("hysteresis state %q (%v) left behind", h, err)
	}
	waitNoDue(t, w.rc)
	if n := len(w.kafka.ReadAll(w.topics.TopN)); n != 7 {
		t.Fatalf("%d outputs, want 7", n)
	}
}

// waitNoDue waits until the environment's due set is empty: the timer
// settles an entry after it published the step.
func waitNoDue(t *testing.T, rc *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := rc.ZCard(context.Background(), "rostrum:"+env+":due").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rooms still due", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHysteresisSurvivesRestart stores a waiting challenger with a processor
// whose timer never looks again, stops it, and starts another: the new
// processor learns of the room from the due set in Redis and promotes the
// challenger at the same event time as an uninterrupted run would.
func TestHysteresisSurvivesRestart(t *testing.T) {
	w := newHystWorld(t)
	_, stop := w.start(time.Hour) // looks once, at start, then never again
	w.send(0, "a audio 1", "a volume 500", "b audio 1", "b volume 400", "c audio 1", "c volume 300")
	w.expect(1, 0, "a", "b", "c")
	w.send(100, "d audio 1", "d volume 350")
	// Wait until the waiting challenger is stored, with its due entry.
	deadline := time.Now().Add(30 * time.Second)
	for {
		due, _ := w.rc.ZScore(context.Background(), "rostrum:"+env+":due", hystRoom).Result()
		if int64(due) == w.t0+1100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiting challenger was not stored with its deadline")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if n := len(w.kafka.ReadAll(w.topics.TopN)); n != 1 {
		t.Fatalf("%d outputs before the restart, want 1", n)
	}
	w.start(10 * time.Millisecond)
	w.expect(2, 1100, "a", "b", "d")
	waitNoDue(t, w.rc)
}

// TestRepublishOnFlags: the output never shows a listed member's flags
// stale. A change of video, screen share or spotlight of a listed member
// republishes the list (seq + 1) with no slot change; a volume change alone
// does not. A member who starts sharing takes a tile at once; one who stops
// leaves it at once when it is out of the raw top-N.
func TestRepublishOnFlags(t *testing.T) {
	w := newHystWorld(t)
	w.start(10 * time.Millisecond)
	flags := func(seq int64, user string) codec.OutputMember {
		t.Helper()
		w.waitOutput(seq)
		for _, r := range w.kafka.ReadAll(w.topics.TopN) {
			var o codec.Output
			if err := json.Unmarshal(r.Value, &o); err != nil {
				t.Fatal(err)
			}
			if o.Seq != seq {
				continue
			}
			for _, m := range o.Top {
				if m.UserID == user {
					return m
				}
			}
		}
		t.Fatalf("seq %d does not show %s", seq, user)
		return codec.OutputMember{}
	}

	w.send(0, "a audio 1", "a volume 500", "b audio 1", "b volume 400", "c audio 1", "c volume 300")
	w.expect(1, 0, "a", "b", "c")
	w.send(100, "b video 1")
	w.expect(2, 100, "a", "b", "c")
	if m := flags(2, "b"); m.Video != 1 {
		t.Fatalf("seq 2 shows b as %+v", m)
	}
	// Volume alone publishes nothing: the next seq is the screen share's.
	w.send(200, "a volume 480")
	w.send(300, "c screen_share 1")
	w.expect(3, 300, "a", "b", "c")
	if m := flags(3, "c"); m.ScreenShare != 1 || m.Volume != 300 {
		t.Fatalf("seq 3 shows c as %+v", m)
	}
	// d starts presenting quietly: it takes the weakest out member's tile
	// at once (no dwell).
	w.send(400, "d audio 1", "d volume 10", "d screen_share 1")
	w.expect(4, 400, "a", "d", "c")
	// d stops: it fell out of the raw top-N and leaves at once; b is back.
	w.send(500, "d screen_share 0")
	w.expect(5, 500, "a", "b", "c")
	w.send(600, "b spotlight 1")
	w.expect(6, 600, "a", "b", "c")
	if m := flags(6, "b"); m.Spotlight != 1 {
		t.Fatalf("seq 6 shows b as %+v", m)
	}
}
