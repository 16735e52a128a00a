package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/model"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
	"github.com/rostrumhq/rostrum/processor"
)

// EnvName is the environment the chaos processors serve.
const EnvName = "test"

// Slots is the number of processor slots; each has its own WAL directory
// that every process started in the slot reuses, as a StatefulSet pod
// reuses its volume.
const Slots = 3

// Harness is one chaos setup: a kfake cluster, Redis (a node or a
// cluster), the input, and the processor slots. Its methods must be called
// from the test's goroutine.
type Harness struct {
	T          *testing.T
	Kafka      *testenv.Kafka
	RedisAddrs []string
	Topics     processor.Topics
	In         *Input
	// Stability is the processors' stable strategy (ProcessorConfig).
	Stability string
	// Pipeline runs the processors with the batch pipeline on and no
	// boards (with boards its stages run one after the other): set it
	// before the first Start.
	Pipeline bool
	// Nudges counts the records WaitCaughtUp produced to stalled partitions.
	Nudges int
	// Abandoned counts the processors stopped (SIGTERM) while their batch
	// was failing: Run abandons the batch uncommitted and returns an error
	// (processor.Run); the group redelivers it.
	Abandoned int

	walDirs [Slots]string
	logDir  string
	procs   [Slots]*Proc
	starts  int

	monitor *progress
}

// New starts kfake with the topics (3 partitions each) for the input tr
// (see Trace), which the processors' boards count; Redis is the caller's
// (its addresses in redisAddrs).
func New(t *testing.T, redisAddrs []string, tr []trace.Record, boards []*boarddef.Board, stable string) *Harness {
	t.Helper()
	topics := processor.TopicsFor("", EnvName)
	k := testenv.StartKafka(t, testenv.WithTopics(3, topics.All()...))
	in := NewInput(EnvName, 7, tr, model.New(codec.NewMeeting(codec.DefaultEpoch)))
	in.Boards = boards
	// The processors' logs outlive a failed test, for its diagnosis.
	logDir, err := os.MkdirTemp("", "rostrum-chaos-logs-")
	if err != nil {
		t.Fatal(err)
	}
	h := &Harness{T: t, Kafka: k, RedisAddrs: redisAddrs, Topics: topics, In: in, Stability: stable, logDir: logDir}
	for i := range h.walDirs {
		h.walDirs[i] = t.TempDir()
	}
	h.monitor = newProgress(k.Admin(), "rostrum-"+EnvName)
	t.Cleanup(func() {
		h.monitor.stop()
		for _, p := range h.procs {
			if p != nil {
				p.Resume()
				p.Kill()
			}
		}
		if !t.Failed() {
			_ = os.RemoveAll(logDir)
		}
	})
	return h
}

// LogDir holds one log file per slot with the children's logs.
func (h *Harness) LogDir() string { return h.logDir }

// Running returns the slots with a live process.
func (h *Harness) Running() []int {
	var s []int
	for i, p := range h.procs {
		if p != nil {
			s = append(s, i)
		}
	}
	return s
}

// Proc returns the process of slot, or nil.
func (h *Harness) Proc(slot int) *Proc { return h.procs[slot] }

// Start starts a processor in slot (which must be free), retrying for up to
// 30 s while it cannot start (Redis restarting, say).
func (h *Harness) Start(slot int) {
	h.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := startProc(slot, h.Kafka.Seeds, h.RedisAddrs, h.walDirs[slot], filepath.Join(h.logDir, fmt.Sprintf("slot-%d.log", slot)), h.Stability, h.Pipeline)
		if err == nil {
			h.procs[slot] = p
			h.starts++
			return
		}
		if time.Now().After(deadline) {
			h.T.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// State reads what the process of slot has in flight (see Inflight): exact
// while the process is paused.
func (h *Harness) State(slot int) Inflight { return ReadInflight(h.walDirs[slot]) }

// Kill SIGKILLs the process of slot.
func (h *Harness) Kill(slot int) {
	h.procs[slot].Kill() // also a paused one: SIGKILL needs no SIGCONT
	h.procs[slot] = nil
}

// Stop stops the process of slot cleanly (SIGTERM), failing the test if it
// does not exit cleanly or with a failing batch abandoned (counted in
// Abandoned).
func (h *Harness) Stop(slot int) {
	h.T.Helper()
	err := h.procs[slot].Stop()
	h.procs[slot] = nil
	if errors.Is(err, errAbandoned) {
		h.Abandoned++
		return
	}
	if err != nil {
		h.T.Fatalf("%v; see %s", err, h.logDir)
	}
}

// Produce sends the trace's records [from, to) to the input topics in
// chunks, spread evenly over about d, and returns a channel that yields the
// outcome. Each record's Kafka timestamp is the moment it is produced.
func (h *Harness) Produce(from, to int, d time.Duration) <-chan error {
	cl := h.Kafka.Client()
	recs := make([]*kgo.Record, 0, to-from)
	for _, tr := range h.In.Trace[from:to] {
		recs = append(recs, &kgo.Record{Topic: EnvName + ".callbacks." + tr.Topic, Key: []byte(tr.Key), Value: tr.Value})
	}
	const chunk = 250
	pause := d / time.Duration(max(1, len(recs)/chunk))
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for len(recs) > 0 {
			n := min(chunk, len(recs))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := cl.ProduceSync(ctx, recs[:n]...).FirstErr()
			cancel()
			if err != nil {
				done <- err
				return
			}
			recs = recs[n:]
			time.Sleep(pause)
		}
	}()
	return done
}

// Inputs reads back every record of the input topics, with the partition,
// offset and timestamp Kafka gave it.
func (h *Harness) Inputs() []*kgo.Record {
	var all []*kgo.Record
	for _, t := range h.Topics.Inputs() {
		all = append(all, h.Kafka.ReadAll(t)...)
	}
	return all
}

// WaitCaughtUp waits until the group has committed every input record.
//
// A failed offset commit is not retried by rostrum (docs/RELIABILITY.md
// "Known limits"): the next batch's commit covers it. A partition whose
// last batch's commit failed, with no record after it, stays behind until
// one arrives; when the lag has not moved for 10 s, WaitCaughtUp produces
// such a record (of a type rostrum skips) to each partition still behind,
// and counts it (Nudges).
func (h *Harness) WaitCaughtUp(timeout time.Duration) {
	h.T.Helper()
	adm := h.Kafka.Admin()
	group := "rostrum-" + EnvName
	deadline := time.Now().Add(timeout)
	var last int64 = -1
	moved := time.Now()
	for {
		lag, err := adm.Lag(context.Background(), group)
		var total int64
		seen := 0
		behind := map[string][]int32{}
		if err == nil {
			lag.Each(func(l kadm.DescribedGroupLag) {
				for t, ps := range l.Lag {
					for p, pl := range ps {
						if pl.Commit.At >= 0 {
							seen++
						}
						total += pl.Lag
						if pl.Lag > 0 {
							behind[t] = append(behind[t], p)
						}
					}
				}
			})
			if seen == 9 && total == 0 {
				return
			}
		}
		if total != last {
			last, moved = total, time.Now()
		}
		if time.Now().After(deadline) {
			h.T.Fatalf("group %s did not catch up within %s (lag %d, %v); logs in %s", group, timeout, total, err, h.logDir)
		}
		if err == nil && total > 0 && time.Since(moved) > 10*time.Second {
			h.nudge(behind)
			moved = time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nudge produces a record of a type rostrum skips to each partition of
// behind (see WaitCaughtUp).
func (h *Harness) nudge(behind map[string][]int32) {
	h.T.Helper()
	cl := h.Kafka.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for t, ps := range behind {
		for _, p := range ps {
			v := fmt.Sprintf(`{"room_id":"nudge","user_id":"nudge","type":"tick","ts":%d}`, time.Now().UnixMilli())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: t, Partition: p, Value: []byte(v)}).FirstErr()
			cancel()
			if err != nil {
				h.T.Fatalf("nudge %s/%d: %v", t, p, err)
			}
			h.Nudges++
			h.T.Logf("group stalled behind on %s/%d: nudged", t, p)
		}
	}
}

// WaitSettled waits until no room's stable list waits for its hysteresis
// timer (the due set, sink/due.go, is empty): a list that changed with the
// last events is published only when its dwell has passed, and the check
// compares the last published lists with the model.
func (h *Harness) WaitSettled(rc redis.UniversalClient, timeout time.Duration) {
	h.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n, err := rc.ZCard(context.Background(), "rostrum:"+EnvName+":due").Result()
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.T.Fatalf("%d rooms still due after %s (%v); logs in %s", n, timeout, err, h.logDir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitRebuilt waits until the WAL of every slot that ever ran has been
// applied to Redis's current generation (its generation file names it), so
// that nothing a WAL holds is missing after a Redis data loss.
func (h *Harness) WaitRebuilt(gen func() (string, error), timeout time.Duration) {
	h.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		cur, err := gen()
		ok := err == nil
		for _, d := range h.walDirs {
			b, rerr := os.ReadFile(filepath.Join(d, GenerationFile))
			if rerr == nil && strings.TrimSpace(string(b)) != cur {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.T.Fatalf("WALs not applied to Redis generation %q within %s (%v); logs in %s", cur, timeout, err, h.logDir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CountLog counts the lines of the children's logs that contain s.
func (h *Harness) CountLog(s string) int {
	n := 0
	for i := range Slots {
		b, _ := os.ReadFile(filepath.Join(h.logDir, fmt.Sprintf("slot-%d.log", i)))
		n += strings.Count(string(b), s)
	}
	return n
}

// progress samples the group's committed offsets (summed over partitions)
// every 100 ms, to measure how long the pipeline took to move again after
// each fault.
type progress struct {
	mu      sync.Mutex
	samples []sample
	quit    chan struct{}
	done    chan struct{}
}

type sample struct {
	at        time.Time
	committed int64
}

func newProgress(adm *kadm.Client, group string) *progress {
	p := &progress{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			offs, err := adm.FetchOffsets(ctx, group)
			cancel()
			if err == nil {
				var sum int64
				offs.Each(func(o kadm.OffsetResponse) {
					if o.Err == nil && o.At > 0 {
						sum += o.At
					}
				})
				p.mu.Lock()
				p.samples = append(p.samples, sample{time.Now(), sum})
				p.mu.Unlock()
			}
			select {
			case <-p.quit:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *progress) stop() {
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	<-p.done
}

// committedAt returns the last committed total sampled at or before t.
func (p *progress) committedAt(t time.Time) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var c int64
	for _, s := range p.samples {
		if s.at.After(t) {
			break
		}
		c = s.committed
	}
	return c
}

// recovery returns how long after end the committed total first exceeded
// what it was at begin, and false when it never did (nothing was left to
// consume).
func (p *progress) recovery(begin, end time.Time) (time.Duration, bool) {
	base := p.committedAt(begin)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.samples {
		if s.at.Before(end) {
			continue
		}
		if s.committed > base {
			return s.at.Sub(end), true
		}
	}
	return 0, false
}
