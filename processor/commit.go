package processor

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

// Offset commits that failed (step 7 of docs/DESIGN.md §1).
//
// A failed commit loses nothing: the next owner of the partition redelivers
// the batch and the watermarks skip it. But while this processor keeps the
// partition and receives nothing new, no later commit supersedes it, and the
// consumer lag that operators watch stays up for as long as the partition is
// quiet. So the last record of each partition whose commit failed is kept,
// and committed again when a poll brings nothing, while the rebalance that
// poll blocked is still held (the processor owns the partition throughout).
// A later commit of the partition supersedes the entry; a revoke, a loss or
// a rewind drops it: committing it then could move a new owner's offset back,
// or skip what a rewind must consume again.

// commits is what the processor keeps of its offset commits.
type commits struct {
	walSeq    uint64        // WAL sequence of the last batch committed: the WAL may be pruned up to it (prune.go)
	lastPrune time.Time     // the last WAL prune
	failed    failedCommits // the commits that failed, made again when idle
}

// partitionKey names a topic-partition.
type partitionKey struct {
	topic     string
	partition int32
}

// failedCommits holds, per partition, the last record whose commit failed.
// The consumer's rebalance callbacks drop entries from their goroutine.
type failedCommits struct {
	mu   sync.Mutex
	last map[partitionKey]*kgo.Record
	// retryAt: no retry before then, after a retry failed (Run goroutine
	// only)
	retryAt time.Time
}

// commitRetryBackoff is the wait after a retried commit failed.
const commitRetryBackoff = time.Second

// failed remembers recs, whose commit failed.
func (f *failedCommits) failed(recs []*kgo.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		k := partitionKey{r.Topic, r.Partition}
		if old, ok := f.last[k]; !ok || old.Offset < r.Offset {
			if f.last == nil {
				f.last = map[partitionKey]*kgo.Record{}
			}
			f.last[k] = r
		}
	}
}

// committed drops the entries that a commit of recs superseded.
func (f *failedCommits) committed(recs []*kgo.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.last) == 0 {
		return
	}
	for _, r := range recs {
		k := partitionKey{r.Topic, r.Partition}
		if old, ok := f.last[k]; ok && old.Offset <= r.Offset {
			delete(f.last, k)
		}
	}
}

// forget drops the entries of the partitions in ps (nil: every entry).
func (f *failedCommits) forget(ps map[string][]int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ps == nil {
		clear(f.last)
		return
	}
	for t, parts := range ps {
		for _, p := range parts {
			delete(f.last, partitionKey{t, p})
		}
	}
}

// pending returns the records to commit again.
func (f *failedCommits) pending() []*kgo.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*kgo.Record, 0, len(f.last))
	for _, r := range f.last {
		out = append(out, r)
	}
	return out
}

// retryCommits commits again the offsets whose commit failed. Run calls it
// when a poll brought nothing, before it allows the rebalance that poll
// blocked.
func (p *Processor) retryCommits(ctx context.Context) {
	now := time.Now()
	if now.Before(p.commits.failed.retryAt) {
		return
	}
	recs := p.commits.failed.pending()
	if len(recs) == 0 {
		return
	}
	if err := p.cl.CommitRecords(ctx, recs...); err != nil {
		p.commits.failed.retryAt = now.Add(commitRetryBackoff)
		p.lg.Warn("offset commit failed again; trying again when idle", zap.Int("partitions", len(recs)), zap.Error(err))
		return
	}
	p.commits.failed.committed(recs)
	p.lg.Info("offsets whose commit had failed are committed", zap.Int("partitions", len(recs)))
}
