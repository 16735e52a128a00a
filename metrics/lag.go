package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

const (
	// defaultLagEvery is how often WatchLag measures when not told.
	defaultLagEvery = 5 * time.Second
	// lagOffsetsTimeout bounds the offset requests of one measurement.
	lagOffsetsTimeout = 10 * time.Second
	// lagFetchTimeout bounds the reading of the oldest unprocessed records
	// of one measurement.
	lagFetchTimeout = 5 * time.Second
)

// partitionLag is the measured lag of one partition.
type partitionLag struct {
	records int64   // end offset minus committed offset
	seconds float64 // age of the record at the committed offset; 0 when records is 0
}

// partitionOffsets says where the unprocessed records of a partition are.
type partitionOffsets struct {
	lag   int64 // records not yet committed
	from  int64 // the committed offset, else the log start; -1 when unknown (read from the start)
	start int64 // the log start offset; -1 when unknown
	end   int64 // the end offset (high watermark)
	err   error // the partition could not be measured
}

// WatchLag measures the consumer lag of group on topics now and then every
// every (5 s when every ≤ 0) until ctx ends, and keeps the
// rostrum_consumer_lag_* and rostrum_consumer_group_lag_* gauges and Lag up
// to date. It returns when ctx is done. Run it at most once at a time per
// Processor.
//
// Each measurement reads the group's committed offsets and the partitions'
// start and end offsets with cl (kadm's Lag), then, for each partition that
// lags, reads the record at the committed offset (or the first one after it,
// when retention or compaction removed it; the log start when nothing was
// committed) with a consumer client of its own, built from cl's connection
// options (seed brokers, dialer or TLS, SASL, client id, logger) and closed
// when WatchLag returns. The age is now minus that record's timestamp, as read
// from Kafka. cl itself is only used for requests: it may be the processor's
// own client, and it is not closed.
//
// A failed measurement is logged (one line per measurement) and leaves the
// gauges it could not update as they were; it never stops WatchLag. The
// gauge children of a partition that is no longer listed (a deleted topic)
// are removed.
//
// WatchLag also creates the topics' children of
// rostrum_records_consumed_total and rostrum_events_applied_total at zero.
func (p *Processor) WatchLag(ctx context.Context, cl *kgo.Client, group string, topics []string, every time.Duration, lg *zap.Logger) {
	if every <= 0 {
		every = defaultLagEvery
	}
	if lg == nil {
		lg = zap.NewNop()
	}
	for _, t := range topics {
		p.consumed.WithLabelValues(t)
		p.applied.WithLabelValues(t)
	}
	w := p.newLagWatcher(cl, group, topics)
	defer w.close()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := w.measure(ctx); err != nil && ctx.Err() == nil {
			lg.Warn("consumer lag not measured", zap.String("group", group), zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Lag returns the consumer group's lag as last measured by WatchLag: the
// records not yet committed, summed over the partitions, and the age in
// seconds of the oldest of them. Both are 0 before the first measurement.
func (p *Processor) Lag() (records int64, seconds float64) {
	p.lagMu.Lock()
	defer p.lagMu.Unlock()
	return p.lagTotal, p.lagMax
}

// lagWatcher measures one group's lag on some topics.
type lagWatcher struct {
	p      *Processor
	src    *kgo.Client
	adm    *kadm.Client
	group  string
	topics []string
	reader *oldestReader // created on first use
}

func (p *Processor) newLagWatcher(cl *kgo.Client, group string, topics []string) *lagWatcher {
	return &lagWatcher{p: p, src: cl, adm: kadm.NewClient(cl), group: group, topics: topics}
}

func (w *lagWatcher) close() {
	if w.reader != nil {
		w.reader.close()
	}
}

// measure takes one measurement and updates the gauges. It returns what went
// wrong, if anything; the gauges of the partitions it could measure are
// updated even then.
func (w *lagWatcher) measure(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, lagOffsetsTimeout)
	offs, problems, err := w.offsets(octx)
	cancel()
	if err != nil {
		return err
	}

	prev := w.p.lagSnapshot()
	next := make(map[topicPartition]partitionLag, len(offs))
	lagging := make(map[topicPartition]partitionOffsets)
	for tp, o := range offs {
		switch {
		case o.err != nil:
			problems = append(problems, fmt.Errorf("metrics: lag of %s/%d: %w", tp.topic, tp.partition, o.err))
			if errors.Is(o.err, kerr.UnknownTopicOrPartition) {
				continue // gone: its gauges are removed
			}
			if old, ok := prev[tp]; ok {
				next[tp] = old
			}
		case o.lag > 0 && o.start >= o.end:
			// Retention removed every record the group has not
			// committed: nothing is left to wait for.
			next[tp] = partitionLag{records: o.lag}
		case o.lag > 0:
			// Until its oldest record is read, a partition keeps its last age.
			next[tp] = partitionLag{records: o.lag, seconds: prev[tp].seconds}
			lagging[tp] = o
		default:
			next[tp] = partitionLag{}
		}
	}

	if len(lagging) > 0 {
		if err := w.readAges(ctx, lagging, next); err != nil {
			problems = append(problems, err)
		}
	}

	w.p.setLag(next)
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return problems[0]
	default:
		return fmt.Errorf("%w (and %d more problems)", problems[0], len(problems)-1)
	}
}

// readAges sets in next the age of the oldest unprocessed record of each
// lagging partition. A partition whose record was not read keeps the age
// already in next, and the error says so.
func (w *lagWatcher) readAges(ctx context.Context, lagging map[topicPartition]partitionOffsets, next map[topicPartition]partitionLag) error {
	if w.reader == nil {
		r, err := newOldestReader(w.src)
		if err != nil {
			return err
		}
		w.reader = r
	}
	ctx, cancel := context.WithTimeout(ctx, lagFetchTimeout)
	defer cancel()
	ages, err := w.reader.ages(ctx, lagging)
	for tp, age := range ages {
		pl := next[tp]
		pl.seconds = age
		next[tp] = pl
	}
	return err
}

// offsets lists the lag of every partition of the watched topics. A
// partition that could not be measured carries its error; problems are
// those of whole topics; err means nothing could be measured.
func (w *lagWatcher) offsets(ctx context.Context) (offs map[topicPartition]partitionOffsets, problems []error, err error) {
	lags, err := w.adm.Lag(ctx, w.group)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: lag of group %s: %w", w.group, err)
	}
	var gl kadm.GroupLag
	if dl, ok := lags[w.group]; ok {
		// A group the coordinator cannot describe may still hold
		// commits: uncovered reads them.
		if err := dl.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return nil, nil, fmt.Errorf("metrics: lag of group %s: %w", w.group, err)
		}
		gl = dl.Lag
	}

	offs = make(map[topicPartition]partitionOffsets)
	var rest []string
	for _, t := range w.topics {
		ps := gl[t]
		if len(ps) == 0 {
			rest = append(rest, t)
			continue
		}
		for part, ml := range ps {
			o := partitionOffsets{lag: ml.Lag, from: -1, start: -1, end: ml.End.Offset, err: ml.Err}
			if ml.Start.Err == nil {
				o.from, o.start = ml.Start.Offset, ml.Start.Offset
			}
			if ml.Commit.At >= 0 {
				o.from = ml.Commit.At
			}
			offs[topicPartition{t, part}] = o
		}
	}
	if len(rest) > 0 {
		problems, err = w.uncovered(ctx, rest, offs)
		if err != nil {
			return nil, nil, err
		}
	}
	return offs, problems, nil
}

// uncovered adds to offs the partitions of topics that kadm's Lag left out:
// topics no member consumes and nothing was committed to yet, or all of them
// when the group does not exist. A partition without a commit lags by its end
// minus its start offset.
func (w *lagWatcher) uncovered(ctx context.Context, topics []string, offs map[topicPartition]partitionOffsets) (problems []error, err error) {
	commits, err := w.adm.FetchOffsets(ctx, w.group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("metrics: committed offsets of group %s: %w", w.group, err)
	}
	starts, err := w.adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("metrics: start offsets of %v: %w", topics, err)
	}
	ends, err := w.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("metrics: end offsets of %v: %w", topics, err)
	}
	for _, t := range topics {
		ps := ends[t]
		if _, missing := ps[-1]; missing || len(ps) == 0 {
			problems = append(problems, fmt.Errorf("metrics: lag of %s: %w", t, kerr.UnknownTopicOrPartition))
			continue
		}
		for part, e := range ps {
			o := partitionOffsets{from: -1, start: -1, end: e.Offset, err: e.Err}
			if e.Err == nil {
				if s, ok := starts.Lookup(t, part); ok && s.Err == nil {
					o.from, o.start = s.Offset, s.Offset
				}
				if c, ok := commits.Lookup(t, part); ok && c.Err == nil && c.At >= 0 {
					o.from = c.At
				}
				o.lag = max(0, e.Offset-max(0, o.from))
			}
			offs[topicPartition{t, part}] = o
		}
	}
	return problems, nil
}

// lagSnapshot returns a copy of the last measured lag of each partition.
func (p *Processor) lagSnapshot() map[topicPartition]partitionLag {
	p.lagMu.Lock()
	defer p.lagMu.Unlock()
	m := make(map[topicPartition]partitionLag, len(p.lagParts))
	for tp, pl := range p.lagParts {
		m[tp] = pl
	}
	return m
}

// setLag makes next the measured lag: it sets the gauges, removes the
// children of partitions not in next, and updates the group's totals.
func (p *Processor) setLag(next map[topicPartition]partitionLag) {
	p.lagMu.Lock()
	defer p.lagMu.Unlock()
	for tp := range p.lagParts {
		if _, ok := next[tp]; !ok {
			p.lagRecords.DeleteLabelValues(tp.labels()...)
			p.lagSeconds.DeleteLabelValues(tp.labels()...)
		}
	}
	var total int64
	var oldest float64
	for tp, pl := range next {
		p.lagRecords.WithLabelValues(tp.labels()...).Set(float64(pl.records))
		p.lagSeconds.WithLabelValues(tp.labels()...).Set(pl.seconds)
		total += pl.records
		oldest = max(oldest, pl.seconds)
	}
	p.groupLagRecords.Set(float64(total))
	p.groupLagSeconds.Set(oldest)
	p.lagParts, p.lagTotal, p.lagMax = next, total, oldest
}

// PartitionLag is the measured lag of one input partition.
type PartitionLag struct {
	Topic     string
	Partition int32
	Records   int64   // end offset minus committed offset
	Seconds   float64 // age of the oldest uncommitted record; 0 when Records is 0
}

// PartitionLags returns the lag of each partition as last measured by
// WatchLag, ordered by topic and partition; none before the first
// measurement.
func (p *Processor) PartitionLags() []PartitionLag {
	snap := p.lagSnapshot()
	out := make([]PartitionLag, 0, len(snap))
	for tp, pl := range snap {
		out = append(out, PartitionLag{Topic: tp.topic, Partition: tp.partition, Records: pl.records, Seconds: pl.seconds})
	}
	slices.SortFunc(out, func(a, b PartitionLag) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}
