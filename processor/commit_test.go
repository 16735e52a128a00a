package processor_test

import (
	"sync/atomic"
	"testing"

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
	// Once the processor has consumed every record, the broker accepts
	// commits again; runWithFaults then waits for the group's lag to be 0.
	w.runWithFaults(map[int64]func(){int64(len(w.trace)): func() {
		if refused.Load() == 0 {
			t.Error("no offset commit was refused: the fault was not exercised")
		}
		refusing.Store(false)
	}})
	w.check()
	t.Logf("%d commits refused; the idle processor committed their offsets again", refused.Load())
}
