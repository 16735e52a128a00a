package processor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// The batch pipeline: two stages, at most one batch ahead.
//
// Stage 1 (prepare) is steps 1–2 of the durability order: poll, decode and
// fold, WAL append and fsync. Stage 2 (finish) is steps 3–8: DLQ, Redis
// apply and stable merge, boards, outputs, commit. Stage 1 runs on the Run
// goroutine; stage 2 of a batch runs on a goroutine of its own, so that
// while batch N waits on Redis and the broker, batch N+1 is polled,
// decoded, folded and made durable in the WAL:
//
//	Run goroutine:  pace · poll N+1 · prepare N+1 · wait N │ pace · poll N+2 · prepare N+2 · wait N+1 │
//	stage 2:        finish N ····························│ finish N+1 ······························│
//
// The poll of N+1 is paced to the end of N's stage 2 (Processor.pace), so
// that N+1 holds what arrived meanwhile, not just what arrived during N's
// prepare.
//
// What it keeps:
//
//   - the durability order per batch: a batch reaches stage 2 only after
//     its WAL frame is fsynced, and each batch still goes through steps 3–8
//     in order;
//   - the order between batches: stage 2 of N+1 starts only after stage 2
//     of N has finished (its Redis apply, outputs and commit), so Redis
//     sees the batches in poll order, the acknowledgements of N's outputs
//     ride in N+1's apply as before, and offsets are committed in order,
//     each batch's only after its outputs were acknowledged;
//   - rebalances: the client blocks rebalances from a poll until
//     AllowRebalance (kgo.BlockRebalanceOnPoll). Run calls it only with the
//     pipeline empty: when a poll brought nothing, on shutdown, and as
//     soon as the client says that a rebalance waits
//     (kgo.OnPartitionsCallbackBlocked), after finishing the batches in
//     hand. So no offset is ever committed for a partition this processor
//     no longer owns, and a rebalance waits for at most two batches;
//   - the WAL's single writer: Append and Prune run on the Run goroutine
//     only (Prune after a batch's stage 2 has finished); recovery only
//     replays the log, which may run beside an Append;
//   - a rewind: when stage 2 of N rebuilt Redis and rewound the partitions
//     (recover.go), batch N+1, polled meanwhile, may hold records from
//     before or after the rewind; it is applied (the watermarks make that
//     harmless) but, like N, not committed;
//   - shutdown: both batches in hand finish under the drain context, so
//     Config.ShutdownTimeout still bounds a stop; a failing batch is left
//     uncommitted and redelivered, as before.
//
// Without Config.PipelineBatches (the default), and with boards
// configured, the stages run one after the other (the batch is polled only
// after the one before it was committed). With boards, because a batch's decode resets the shared board
// batch that the batch before it applies (boards.go), and the deferred board
// coverage depends on the previous batch's outcome.
//
// Memory: at most two batches are held (the one in stage 2 and the one
// prepared), each with its own folder (pipeline.folds).

// pipeline is the batch pipeline's state, on the Run goroutine only.
type pipeline struct {
	folds [2]folder // the poll batches' folders: one in stage 2, one prepared
	next  int       // index in folds of the next poll batch
	// The last batch's stage 2 (from its launch to its end) and prepare
	// times, to pace the next poll.
	lastStage2, lastPrepare time.Duration
}

// flight is a batch in stage 2.
type flight struct {
	b        *batch
	started  time.Time
	done     chan error    // receives stage 2's outcome once
	finished chan struct{} // closed when stage 2 ends
	took     time.Duration // stage 2's time, set before done is sent
}

// pipelined reports whether stage 1 of a batch may overlap stage 2 of the
// one before it (see above: only with Config.PipelineBatches, and not with
// boards).
func (p *Processor) pipelined() bool { return p.cfg.PipelineBatches && len(p.cfg.Boards) == 0 }

// nextBatch starts a batch of recs on the folder the batch in stage 2 does
// not use.
func (p *Processor) nextBatch(recs []*kgo.Record) *batch {
	f := &p.pipe.folds[p.pipe.next]
	p.pipe.next ^= 1
	b := newBatch(p, recs)
	b.fold = f
	return b
}

// launch runs stage 2 of b on a goroutine of its own; wait for its outcome
// with land. After a successful batch it runs the hysteresis timer, as the
// sequential loop did between batches, so that the timer never overlaps a
// batch's stage 2.
func (p *Processor) launch(ctx, drain context.Context, b *batch) *flight {
	f := &flight{b: b, started: time.Now(), done: make(chan error, 1), finished: make(chan struct{})}
	go func() {
		defer close(f.finished)
		err := p.processWithRetry(ctx, drain, b)
		f.took = time.Since(f.started)
		if err == nil && ctx.Err() == nil {
			p.maybeStepDue(ctx)
		}
		f.done <- err
	}()
	return f
}

// pace waits, before the poll of the next batch, until the batch in stage 2
// is about to finish: until it has run as long as the last stage 2 took
// (the hysteresis timer's pass after it not counted),
// less the last prepare, or until it finishes, whichever comes first. A
// poll right after the launch would take only the records that arrived
// during the prepare before it, and batches would alternate between large
// and tiny ones, each tiny one paying a batch's fixed costs (an fsync, the
// round trips, a produce, a commit). Paced, a batch holds what arrived
// during the stage 2 before it, as without the pipeline, and its prepare
// still overlaps that stage 2's end.
func (p *Processor) pace(ctx context.Context, f *flight) {
	if f == nil || p.pipe.lastStage2 <= p.pipe.lastPrepare {
		return
	}
	t := time.NewTimer(time.Until(f.started.Add(p.pipe.lastStage2 - p.pipe.lastPrepare)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-f.finished:
	case <-ctx.Done():
	}
}

// land waits for the batch in stage 2, if any, then prunes the WAL (on
// this, the WAL's writer goroutine). It reports whether that batch's own
// stage 2 rewound the partitions (a batch marked afterRewind did not).
func (p *Processor) land(f **flight) (rewound bool, err error) {
	if *f == nil {
		return false, nil
	}
	err = <-(*f).done
	rewound = (*f).b.rewound
	p.pipe.lastStage2, p.pipe.lastPrepare = (*f).took, (*f).b.prepTook
	*f = nil
	if err == nil {
		p.maybePrune()
	}
	return rewound, err
}

// prepareWithRetry runs stage 1 of b (decode, fold, WAL append and fsync)
// until it succeeds, with backoff and jitter as processWithRetry; retries
// stop when ctx is cancelled.
func (p *Processor) prepareWithRetry(ctx, drain context.Context, b *batch) error {
	backoff := p.cfg.Retry.Backoff
	for {
		err := b.prepare(drain)
		if err == nil {
			return nil
		}
		if backoff, err = p.retryAfter(ctx, err, len(b.recs), backoff); err != nil {
			return err
		}
	}
}

// retryAfter records a failed attempt of a batch of n records, pauses
// fetching and waits backoff plus jitter. It returns the next backoff, or an
// error when ctx is cancelled first.
func (p *Processor) retryAfter(ctx context.Context, err error, n int, backoff time.Duration) (time.Duration, error) {
	p.stats.Retries.Add(1)
	p.cfg.Observer.Retry()
	p.health.failed(err, time.Now())
	p.pauseFetching()
	p.lg.Warn("batch failed, retrying", zap.Int("records", n), zap.Duration("backoff", backoff), zap.Error(err))
	jitter := time.Duration(rand.Int64N(int64(backoff)/2 + 1))
	select {
	case <-ctx.Done():
		return backoff, fmt.Errorf("stopped with a failing batch (left uncommitted, it will be redelivered): %w", err)
	case <-time.After(backoff + jitter):
	}
	return min(2*backoff, 5*time.Second), nil
}
