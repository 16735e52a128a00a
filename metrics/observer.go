package metrics

import "time"

// The methods below implement the processor's Observer interface. They never
// block and never panic: a negative count is ignored (a Prometheus counter
// cannot go down).

// Consumed counts records consumed from topic.
func (p *Processor) Consumed(topic string, records int) {
	if records >= 0 {
		p.consumed.WithLabelValues(topic).Add(float64(records))
	}
}

// Applied counts events of topic applied to Redis.
func (p *Processor) Applied(topic string, events int) {
	if events >= 0 {
		p.applied.WithLabelValues(topic).Add(float64(events))
	}
}

// DLQ counts one record of topic sent to the dead-letter topic; reason is the
// short class of the rule it broke, never free text.
func (p *Processor) DLQ(topic, reason string) {
	p.dlq.WithLabelValues(topic, reason).Inc()
	p.dlqMu.Lock()
	p.dlqByReason[reason]++
	p.dlqMu.Unlock()
}

// DLQByReason returns the records sent to the DLQ since start, by reason
// class (the reason label of rostrum_dlq_records_total, summed over topics).
func (p *Processor) DLQByReason() map[string]int64 {
	p.dlqMu.Lock()
	defer p.dlqMu.Unlock()
	out := make(map[string]int64, len(p.dlqByReason))
	for r, n := range p.dlqByReason {
		out[r] = n
	}
	return out
}

// MaxIgnoredTypes bounds the type label of rostrum_events_ignored_total:
// the first this many unknown types seen keep their name, later ones count
// as "other", so a producer sending made-up types cannot grow the series
// without bound.
const MaxIgnoredTypes = 32

// IgnoredOther is the type label of unknown types beyond MaxIgnoredTypes.
const IgnoredOther = "other"

// Ignored counts events of topic skipped for their unknown type typ.
func (p *Processor) Ignored(topic, typ string, events int) {
	if events <= 0 {
		return
	}
	p.ignoredMu.Lock()
	if !p.ignoredTypes[typ] {
		if len(p.ignoredTypes) < MaxIgnoredTypes && typ != IgnoredOther {
			p.ignoredTypes[typ] = true
		} else {
			typ = IgnoredOther
		}
	}
	p.ignoredMu.Unlock()
	p.ignored.WithLabelValues(topic, typ).Add(float64(events))
}

// Batch observes a completed batch: its size and how long it took, retries
// included.
func (p *Processor) Batch(records int, took time.Duration) {
	p.batchRecords.Observe(float64(records))
	p.batchDuration.Observe(took.Seconds())
}

// RedisRoundTrip observes one Redis round trip; op is "apply", "store" or
// "boards".
func (p *Processor) RedisRoundTrip(op string, took time.Duration) {
	p.redisRoundTrip.WithLabelValues(op).Observe(took.Seconds())
}

// WALAppend observes one write-ahead log append (its fsync included).
func (p *Processor) WALAppend(took time.Duration) {
	p.walAppend.Observe(took.Seconds())
}

// ObserveFsync observes one write-ahead log fsync. Its signature is that of
// wal.Config.OnSync.
func (p *Processor) ObserveFsync(took time.Duration) {
	p.walFsync.Observe(took.Seconds())
}

// Published counts output records published.
func (p *Processor) Published(records int) {
	if records >= 0 {
		p.published.Add(float64(records))
	}
}

// Conflicts counts rooms whose stable list lost a compare-and-set.
func (p *Processor) Conflicts(rooms int) {
	if rooms >= 0 {
		p.conflicts.Add(float64(rooms))
	}
}

// Retry counts one failed batch attempt that is retried.
func (p *Processor) Retry() { p.retries.Inc() }

// Rebalance counts a rebalance callback that moved partitions (one with no
// partitions is not counted) and keeps the assigned-partitions gauge: kind
// "assigned" adds partitions, "revoked" and "lost" subtract them. Another kind
// is counted but leaves the gauge alone.
func (p *Processor) Rebalance(kind string, partitions int) {
	if partitions <= 0 {
		return
	}
	p.rebalances.WithLabelValues(kind).Inc()
	switch kind {
	case "assigned":
		p.assigned.Add(float64(partitions))
	case "revoked", "lost":
		p.assigned.Sub(float64(partitions))
	}
}

// RedisReset counts one rebuild of the state after Redis lost its data.
func (p *Processor) RedisReset() { p.redisResets.Inc() }

// BoardsApplied counts one board apply's results (processor.BoardObserver).
func (p *Processor) BoardsApplied(counted, duplicates, saturated, gapsClosed int) {
	p.boardEvents.WithLabelValues("counted").Add(float64(counted))
	p.boardEvents.WithLabelValues("duplicate").Add(float64(duplicates))
	p.boardSaturated.Add(float64(saturated))
	p.boardGapsClosed.Add(float64(gapsClosed))
}

// FetchPaused sets the back-pressure gauge: paused while a failing batch
// retries (processor.BackPressureObserver).
func (p *Processor) FetchPaused(paused bool) {
	if paused {
		p.fetchPaused.Set(1)
	} else {
		p.fetchPaused.Set(0)
	}
}
