package processor

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/ranking"
)

// TestAckQueue: a take returns the acknowledgements of the batch's rooms and
// those older than the delay, once each; a take without done (a failed
// apply) loses none; a newer acknowledgement of a room replaces the older.
func TestAckQueue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var q ackQueue
	names := func(acks []ranking.Ack) string {
		var s []string
		for _, a := range acks {
			s = append(s, a.Room+"@"+string(rune('0'+a.Seq)))
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	q.add([]ranking.Ack{{Room: "a", Seq: 1}, {Room: "b", Seq: 1}}, t0)
	q.add([]ranking.Ack{{Room: "c", Seq: 1}, {Room: "a", Seq: 2}}, t0.Add(500*time.Millisecond))
	if q.len() != 3 {
		t.Fatalf("len %d, want 3 (a's newer acknowledgement replaces the older)", q.len())
	}
	batch := map[string]int64{"c": 0, "x": 0}
	if got := names(q.take(batch, t0.Add(200*time.Millisecond), time.Second)); got != "c@1" {
		t.Fatalf("take before the delay: %q, want the batch's room only", got)
	}
	// Not done: the apply failed, the same take again.
	if got := names(q.take(batch, t0.Add(1200*time.Millisecond), time.Second)); got != "b@1 c@1" {
		t.Fatalf("take after the delay: %q, want c (in the batch) and b (expired; a@1 is replaced, a@2 is recent)", got)
	}
	q.done()
	if q.len() != 1 {
		t.Fatalf("len %d after done, want 1 (a@2)", q.len())
	}
	if got := names(q.take(nil, t0.Add(1300*time.Millisecond), time.Second)); got != "" {
		t.Fatalf("take of nothing due: %q", got)
	}
	if got := names(q.take(nil, t0.Add(1600*time.Millisecond), time.Second)); got != "a@2" {
		t.Fatalf("take after a@2's delay: %q", got)
	}
	q.done()
	q.add([]ranking.Ack{{Room: "d", Seq: 3}}, t0.Add(2*time.Second))
	if got := names(q.take(nil, t0.Add(2*time.Second), 0)); got != "d@3" {
		t.Fatalf("take with no delay: %q, want everything", got)
	}
	q.done()
	if q.len() != 0 || len(q.fifo) != 0 {
		t.Fatalf("queue not empty: %d, fifo %d", q.len(), len(q.fifo))
	}
}
