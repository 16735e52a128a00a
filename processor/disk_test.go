package processor_test

import (
	"context"
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// TestDiskFaults runs the pipeline with its WAL on a disk that fails, one
// fault after the other, while the trace streams in: the disk fills up in
// the middle of a frame (ENOSPC), fsync fails (EIO, the unsynced bytes
// dropped as a kernel may drop them), and the directory fsync of a new
// segment fails (EIO). While the disk fails the batch in hand must be
// retried, never skipped: fetching pauses, Ready reports the failing batch
// (/readyz 503), and no offset is committed. Once the disk works again the
// processor goes on. Then Redis loses its data, so the rebuild reads back
// what the WAL holds: the end state must equal the model, and the WAL must
// hold every input record.
func TestDiskFaults(t *testing.T) {
	w := newWorld(t, e2eTrace(9, 12000))
	feed := newFeeder(w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	disk := testenv.NewDisk()
	walDir := t.TempDir()
	// Small segments, so that rotations (and the directory fsync of each
	// new segment) happen every few batches.
	log, err := wal.Open(walDir, wal.Config{FS: disk, SegmentBytes: 256 << 10, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	store, err := sink.New(w.redis.Client(), sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	if err != nil {
		t.Fatal(err)
	}
	p, err := processor.New(ctx, processor.Config{
		Brokers: w.kafka.Seeds, Env: env, MaxPollRecords: 300,
		Decode: codec.DecodeConfig{MaxFutureSkew: time.Minute},
		// The Redis data loss at the end is noticed also when the
		// processor has nothing left to consume by then.
		GenerationCheckEvery: 100 * time.Millisecond,
		KafkaOpts:            testenv.FastGroupOpts(),
		Logger:               zaptest.NewLogger(t),
		Retry:                processor.RetryConfig{Backoff: 20 * time.Millisecond, UnreadyFailures: 3, UnreadyAfter: time.Minute},
	}, store, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	adm := w.kafka.Admin()
	committed := func() map[string]map[int32]int64 {
		t.Helper()
		offs, err := adm.FetchOffsets(ctx, "rostrum-"+env)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]map[int32]int64{}
		offs.Each(func(o kadm.OffsetResponse) {
			if m[o.Topic] == nil {
				m[o.Topic] = map[int32]int64{}
			}
			m[o.Topic][o.Partition] = o.At
		})
		return m
	}
	commits := w.kafka.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Observe: true, Count: -1})

	for _, fault := range []struct {
		name string
		op   testenv.DiskOp
		err  error
	}{
		{"disk full mid-frame", testenv.DiskWrite, syscall.ENOSPC},
		{"fsync fails", testenv.DiskSync, syscall.EIO},
		{"directory fsync of a new segment fails", testenv.DiskDirSync, syscall.EIO},
	} {
		feed.to(feed.next + 2000)
		n := int64(feed.next)
		waitFor("progress before "+fault.name, func() bool { return p.Stats().Records.Load() >= n })
		hits := disk.Hits(fault.op)
		disk.Fail(fault.op, fault.err, -1)
		feed.to(feed.next + 1000) // the batches that meet the fault
		waitFor(fault.name+": a batch hit it", func() bool { return disk.Hits(fault.op) > hits })
		// The failing batch's attempt began before the first hit, so the
		// batch before it is committed by now: from here on nothing may be.
		before, commitsBefore, records := committed(), commits.Hits(), p.Stats().Records.Load()
		waitFor(fault.name+": fetching paused", p.FetchPaused)
		waitFor(fault.name+": not ready", func() bool {
			err := p.Ready(ctx)
			return err != nil && strings.Contains(err.Error(), "batch failing")
		})
		waitFor(fault.name+": three more failed attempts", func() bool { return disk.Hits(fault.op) >= hits+4 })
		if n := commits.Hits() - commitsBefore; n != 0 {
			t.Fatalf("%s: %d offset commits while the disk failed", fault.name, n)
		}
		if after := committed(); !maps.EqualFunc(before, after, maps.Equal) {
			t.Fatalf("%s: committed offsets moved while the disk failed:\n%v\n%v", fault.name, before, after)
		}
		if n := p.Stats().Records.Load(); n != records {
			t.Fatalf("%s: %d records went through while the disk failed", fault.name, n-records)
		}
		t.Logf("%s: %d failed disk operations, not ready: %v", fault.name, disk.Hits(fault.op)-hits, p.Ready(ctx))
		disk.Heal()
		waitFor(fault.name+": fetching resumed", func() bool { return !p.FetchPaused() })
		waitFor(fault.name+": ready again", func() bool { return p.Ready(ctx) == nil })
	}

	// Redis loses its data after the faults: the rebuild replays the WAL,
	// including the batches written again after the disk failed.
	n := int64(feed.next)
	waitFor("progress before the Redis restart", func() bool { return p.Stats().Records.Load() >= n })
	produced := feed.rest()
	resets := p.Stats().RedisResets.Load()
	w.redis.Restart(false)
	waitFor("the rebuild after the Redis restart", func() bool { return p.Stats().RedisResets.Load() > resets })
	w.waitProduced(produced)
	w.waitCaughtUp(2 * time.Minute)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	w.check()
	checkWALHoldsEverything(t, w, walDir)
}

// checkWALHoldsEverything requires the log in dir to hold every record of
// the input topics: no batch was ever applied without being in the WAL.
func checkWALHoldsEverything(t *testing.T, w *world, dir string) {
	t.Helper()
	type tp struct {
		topic string
		part  int32
	}
	seen := map[tp]map[int64]bool{}
	if _, err := wal.Inspect(dir, func(_ uint64, _ time.Time, recs []wal.Record) error {
		for _, r := range recs {
			k := tp{r.Topic, r.Partition}
			if seen[k] == nil {
				seen[k] = map[int64]bool{}
			}
			seen[k][r.Offset] = true
		}
		return nil
	}); err != nil {
		t.Fatalf("read the WAL: %v", err)
	}
	ends, err := w.kafka.Admin().ListEndOffsets(context.Background(), w.topics.Inputs()...)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	ends.Each(func(o kadm.ListedOffset) {
		for off := int64(0); off < o.Offset; off++ {
			if !seen[tp{o.Topic, o.Partition}][off] {
				t.Fatalf("the WAL lacks %s/%d offset %d", o.Topic, o.Partition, off)
			}
		}
		total += int(o.Offset)
	})
	if total != len(w.trace) {
		t.Fatalf("input topics hold %d records, the trace %d", total, len(w.trace))
	}
}

// feeder produces the world's trace in the slices a test chooses, so that
// a fault meets batches in flight however fast the processor runs.
type feeder struct {
	w    *world
	cl   *kgo.Client
	next int // first trace record not produced yet
}

func newFeeder(w *world) *feeder { return &feeder{w: w, cl: w.kafka.Client()} }

// to produces the trace records up to n (exclusive), waiting for the
// broker's acknowledgements.
func (f *feeder) to(n int) {
	f.w.t.Helper()
	n = min(n, len(f.w.trace))
	recs := make([]*kgo.Record, 0, n-f.next)
	for _, tr := range f.w.trace[f.next:n] {
		recs = append(recs, kafkaRecord(tr))
	}
	if err := f.cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		f.w.t.Fatalf("produce trace: %v", err)
	}
	f.next = n
}

// rest produces the remaining records in chunks of 300 with short pauses,
// as load, and returns a channel closed when all are acknowledged.
func (f *feeder) rest() <-chan error {
	done := make(chan error, 1)
	recs := make([]*kgo.Record, 0, len(f.w.trace)-f.next)
	for _, tr := range f.w.trace[f.next:] {
		recs = append(recs, kafkaRecord(tr))
	}
	f.next = len(f.w.trace)
	go func() {
		defer close(done)
		for len(recs) > 0 {
			n := min(300, len(recs))
			if err := f.cl.ProduceSync(context.Background(), recs[:n]...).FirstErr(); err != nil {
				done <- err
				return
			}
			recs = recs[n:]
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return done
}
