package processor_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFailedCommitRetriedWhenIdle: the broker refuses every offset commit
// while the processor consumes the whole trace, then accepts them again. No
// record arrives after that, so no later batch commits; the processor must
// commit the refused offsets again while idle, bringing the group's lag to 0
// (without the retry it stays up until the next record).
func TestFailedCommitRetriedWhenIdle(t *testing.T) {
	w := newWorld(t, e2eTrace(7, 3000))
	fake := w.kafka.Fake()
	var refusing atomic.Bool
	var refused atomic.Int32
	refusing.Store(true)
	fake.ControlKey(int16(kmsg.OffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		fake.KeepControl()
		if !refusing.Load() {
			return nil, nil, false
		}
		r := req.(*kmsg.OffsetCommitRequest)
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, rt := range r.Topics {
			t := kmsg.NewOffsetCommitResponseTopic()
			t.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewOffsetCommitResponseTopicPartition()
				p.Partition = rp.Partition
				p.ErrorCode = kerr.InvalidCommitOffsetSize.Code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		refused.Add(1)
		return resp, nil, true
	})
	w.waitProduced(w.produce(len(w.trace), 0))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, closeFn, err := startProcessor(ctx, w.kafka.Seeds, w.redis.Addr, t.TempDir(), 500)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(2 * time.Minute)
	for p.Stats().Records.Load() < int64(len(w.trace)) {
		if time.Now().After(deadline) {
			t.Fatalf("processed %d of %d records", p.Stats().Records.Load(), len(w.trace))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if refused.Load() == 0 {
		t.Fatal("no offset commit was refused: the fault was not exercised")
	}
	refusing.Store(false)
	w.waitCaughtUp(time.Minute)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	w.check()
	t.Logf("%d commits refused; the idle processor committed their offsets again", refused.Load())
}
