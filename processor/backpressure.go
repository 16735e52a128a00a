package processor

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Back-pressure.
//
// A batch that fails (Redis slow or down, Kafka refusing a produce, the
// WAL's disk full or failing) is retried in place by processWithRetry, with exponential backoff and jitter,
// until it succeeds. While it retries:
//
//   - nothing more is polled, so the only records in memory are the batch in
//     hand (at most MaxPollRecords) and what kgo had already buffered (at
//     most one fetch response per broker, bounded by kgo.FetchMaxBytes);
//   - fetching of the input topics is paused explicitly
//     (kgo.Client.PauseFetchTopics), so the client does not even ask the
//     brokers for more, and resumed once the batch has gone through;
//   - the processor reports itself not ready (Ready, /readyz) once the batch
//     has failed UnreadyFailures attempts in a row or has been failing for
//     UnreadyAfter, whichever comes first, and ready again after the first
//     attempt that succeeds.
//
// No queue in rostrum grows while Redis is failing: the lag grows in Kafka,
// where it belongs, and is visible as consumer lag.

// health is the failure state of the batch in hand. It is written by the
// processor's goroutine and read by Ready from HTTP handlers.
type health struct {
	failures     atomic.Int64 // failed attempts of the batch in hand, in a row
	failingSince atomic.Int64 // Unix ns of its first failed attempt; 0 when healthy
	lastErr      atomic.Pointer[string]
	paused       atomic.Bool // input fetching paused
}

// failed records a failed attempt of the batch in hand.
func (h *health) failed(err error, now time.Time) {
	if h.failures.Add(1) == 1 {
		h.failingSince.Store(now.UnixNano())
	}
	msg := err.Error()
	h.lastErr.Store(&msg)
}

// recovered records that the batch in hand went through.
func (h *health) recovered() {
	h.failures.Store(0)
	h.failingSince.Store(0)
	h.lastErr.Store(nil)
}

// unready returns why the processor is not ready because of failing
// batches, or nil.
func (h *health) unready(cfg *Config, now time.Time) error {
	n := h.failures.Load()
	if n == 0 {
		return nil
	}
	since := time.Duration(now.UnixNano() - h.failingSince.Load())
	if n < int64(cfg.Retry.UnreadyFailures) && since < cfg.Retry.UnreadyAfter {
		return nil
	}
	last := ""
	if p := h.lastErr.Load(); p != nil {
		last = *p
	}
	return fmt.Errorf("batch failing for %s (%d attempts; fetching paused): %s", since.Round(time.Millisecond), n, last)
}

// pauseFetching stops fetching the input topics while a batch retries.
func (p *Processor) pauseFetching() {
	if p.health.paused.CompareAndSwap(false, true) {
		p.cl.PauseFetchTopics(p.topics.Inputs()...)
		p.observeBackPressure(true)
	}
}

// resumeFetching undoes pauseFetching.
func (p *Processor) resumeFetching() {
	if p.health.paused.CompareAndSwap(true, false) {
		p.cl.ResumeFetchTopics(p.topics.Inputs()...)
		p.observeBackPressure(false)
	}
}

// BackPressureObserver is implemented by an Observer that also wants to
// know when fetching is paused and resumed (metrics.Processor does). It is a
// separate interface so that existing Observers need not change.
type BackPressureObserver interface {
	FetchPaused(paused bool)
}

func (p *Processor) observeBackPressure(paused bool) {
	if o, ok := p.cfg.Observer.(BackPressureObserver); ok {
		o.FetchPaused(paused)
	}
}

// FetchPaused reports whether input fetching is paused because a batch is
// failing.
func (p *Processor) FetchPaused() bool { return p.health.paused.Load() }

// BufferedRecords returns how many fetched records the Kafka client holds
// that have not been polled yet. With fetching paused it does not grow.
func (p *Processor) BufferedRecords() int64 { return p.cl.BufferedFetchRecords() }
