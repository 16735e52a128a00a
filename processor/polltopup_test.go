package processor_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/config"
	"github.com/rostrumhq/rostrum/processor"
)

// TestPollTopUp: the records that arrive while a batch is in Redis join the
// next batch (Config.PollTopUp), not the one after. The first batch's apply
// is held; meanwhile record B arrives and the client fetches it (its buffer
// then holds B, and it fetches nothing more until a poll drains it), then
// records C arrive and stay in the broker. Once the apply goes on, the next
// poll returns B, and the second poll of the top-up the fetch that drain
// set off: C. Without the top-up the next batch is B alone. The first
// batch is not topped up (no batch took long before it), so A is alone.
// The end state (Redis, outputs, DLQ, commits) equals the model's.
func TestPollTopUp(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	for _, topUp := range []time.Duration{0, 500 * time.Millisecond} {
		t.Run(fmt.Sprintf("top-up=%s", topUp), func(t *testing.T) {
			batch2 := runHeldThenTopUp(t, topUp)
			if want := 1 + 40; topUp > 0 && batch2 != want {
				t.Errorf("the batch after the held one holds %d records, want B and the 40 of C: %d", batch2, want)
			} else if topUp == 0 && batch2 != 1 {
				t.Errorf("without a top-up the batch after the held one holds %d records, want B alone", batch2)
			}
		})
	}
}

// runHeldThenTopUp runs the scenario of TestPollTopUp with the processor's
// PollTopUp set to topUp, checks the end state against the model, and
// returns the length of the batch after the held one.
func runHeldThenTopUp(t *testing.T, topUp time.Duration) int {
	w := newWorld(t, e2eTrace(11, 42))
	for i, r := range w.trace[:42] {
		if r.Bad != "" {
			t.Fatalf("trace record %d is bad (%s): every record of this test must reach a batch", i, r.Bad)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := startHeld(ctx, t, w, func(c *processor.Config) { c.MaxPollRecords, c.PollTopUp = 0, topUp })
	h.produce(0) // A: the first batch, held in Redis
	select {
	case <-h.store.entered:
	case err := <-h.done:
		t.Fatalf("Run returned before the first apply: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the first batch never reached Redis")
	}
	h.produce(1) // B: fetched while A is held
	for deadline := time.Now().Add(time.Minute); h.p.BufferedFetchRecords() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client never fetched B")
		}
	}
	c := make([]int, 0, 40)
	for i := 2; i < 42; i++ {
		c = append(c, i)
	}
	h.produce(c...) // C: in the broker until a poll drains B
	// The held batch lasts long enough for the next poll to top up (four
	// times the wait, counted from the poll that returned A).
	time.Sleep(4 * topUp)
	close(h.store.release)
	w.waitCaughtUp(2 * time.Minute)
	cancel()
	if err := <-h.done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	w.check()
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	if len(h.log.sizes) < 2 || h.log.sizes[0] != 1 {
		t.Fatalf("WAL batches %v: want A alone, then more", h.log.sizes)
	}
	return h.log.sizes[1]
}

// A top-up outside 0..1s is refused, naming the field.
func TestPollTopUpValidate(t *testing.T) {
	for _, d := range []time.Duration{-time.Millisecond, time.Second + 1} {
		err := processor.Config{Brokers: []string{"localhost:9092"}, Env: env, PollTopUp: d}.Validate()
		var fe *config.FieldError
		if !errors.As(err, &fe) || fe.Field != "PollTopUp" {
			t.Errorf("PollTopUp %s: %v, want a FieldError of PollTopUp", d, err)
		}
	}
	if err := (processor.Config{Brokers: []string{"localhost:9092"}, Env: env, PollTopUp: 2 * time.Millisecond}).Validate(); err != nil {
		t.Errorf("PollTopUp 2ms: %v", err)
	}
}
