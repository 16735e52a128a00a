package chaos

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/wal"
)

// What a child processor has in flight, for counting which faults hit work
// in progress (Schedule.Hits).
//
// A child keeps its state in a small file (InflightFile, beside its WAL),
// rewritten in place at every change, which the harness reads whenever it
// wants, also while the child is stopped with SIGSTOP: the harness stops a
// child, reads the file and then kills, terminates or resumes it, so what it
// reads is exactly the state at the moment of the fault.
//
//	offset  field (little-endian int64)
//	0       WAL sequence of the batch in flight: appended to the WAL, its
//	        offsets not yet committed (0: none)
//	8       batches appended so far
//	16      Redis round trips started so far (their ids are 1, 2, …)
//	24      id of the oldest Redis round trip still in flight (0: none)
//	32      Redis round trips in flight
//	40      group generations joined (partition assignments received)
//
// A batch is in flight from its WAL append (Log.Append) to the end of its
// run, after the offset commit (Observer.Batch), retries included. A Redis
// round trip is a command or a pipeline as the go-redis client runs it,
// its own retries included: one cut by a Redis kill stays in flight while
// the client retries against the dead server.

// InflightFile is the name of the state file in a child's WAL directory.
const InflightFile = "inflight"

const inflightSize = 48

// Inflight is a child's state as read from its InflightFile.
type Inflight struct {
	Batch         int64 // WAL sequence of the batch in flight, 0: none
	Batches       int64 // batches appended so far
	RedisStarted  int64 // Redis round trips started so far
	RedisOldest   int64 // id of the oldest Redis round trip in flight, 0: none
	RedisInFlight int64
	Assignments   int64 // group generations joined so far
}

// ReadInflight reads the state file of a child's WAL directory; a missing
// or short file (a child not yet started) reads as nothing in flight.
func ReadInflight(walDir string) Inflight {
	b, err := os.ReadFile(walDir + "/" + InflightFile)
	if err != nil || len(b) < inflightSize {
		return Inflight{}
	}
	v := func(i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }
	return Inflight{Batch: v(0), Batches: v(1), RedisStarted: v(2), RedisOldest: v(3), RedisInFlight: v(4), Assignments: v(5)}
}

// inflight is the child's side: it tracks the state and writes it through.
type inflight struct {
	mu      sync.Mutex
	f       *os.File
	st      Inflight
	running map[int64]bool // Redis round trips in flight
	buf     [inflightSize]byte
}

func newInflight(walDir string) (*inflight, error) {
	f, err := os.OpenFile(walDir+"/"+InflightFile, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos: state file: %w", err)
	}
	t := &inflight{f: f, running: map[int64]bool{}}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t, t.flush()
}

// flush writes the state; the caller holds mu.
func (t *inflight) flush() error {
	for i, v := range []int64{t.st.Batch, t.st.Batches, t.st.RedisStarted, t.st.RedisOldest, t.st.RedisInFlight, t.st.Assignments} {
		binary.LittleEndian.PutUint64(t.buf[8*i:], uint64(v))
	}
	_, err := t.f.WriteAt(t.buf[:], 0)
	return err
}

func (t *inflight) batchBegun(seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.Batch = int64(seq)
	t.st.Batches++
	_ = t.flush()
}

func (t *inflight) batchDone() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.Batch = 0
	_ = t.flush()
}

func (t *inflight) assigned() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.Assignments++
	_ = t.flush()
}

func (t *inflight) redisBegun() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.RedisStarted++
	id := t.st.RedisStarted
	t.running[id] = true
	if t.st.RedisOldest == 0 {
		t.st.RedisOldest = id
	}
	t.st.RedisInFlight = int64(len(t.running))
	_ = t.flush()
	return id
}

func (t *inflight) redisDone(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.running, id)
	if id == t.st.RedisOldest {
		t.st.RedisOldest = 0
		for r := range t.running {
			if t.st.RedisOldest == 0 || r < t.st.RedisOldest {
				t.st.RedisOldest = r
			}
		}
	}
	t.st.RedisInFlight = int64(len(t.running))
	_ = t.flush()
}

// redisHook marks every round trip of the child's Redis client.
type redisHook struct{ t *inflight }

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		id := h.t.redisBegun()
		defer h.t.redisDone(id)
		return next(ctx, cmd)
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		id := h.t.redisBegun()
		defer h.t.redisDone(id)
		return next(ctx, cmds)
	}
}

var _ redis.Hook = redisHook{}

// trackedLog marks a batch in flight at its WAL append.
type trackedLog struct {
	*wal.Log
	t *inflight
}

func (l trackedLog) Append(recs []wal.Record) (uint64, error) {
	seq, err := l.Log.Append(recs)
	if err == nil {
		l.t.batchBegun(seq)
	}
	return seq, err
}

var _ processor.WAL = trackedLog{}

// batchObserver marks the end of a batch: Observer.Batch is called once its
// offsets are committed.
type batchObserver struct {
	processor.Observer
	t *inflight
}

func (o batchObserver) Batch(records int, took time.Duration) { o.t.batchDone() }

// Rebalance counts the generations joined: a join completes with an
// assignment, also an empty one.
func (o batchObserver) Rebalance(kind string, partitions int) {
	if kind == "assigned" {
		o.t.assigned()
	}
}

var _ processor.Observer = batchObserver{}
