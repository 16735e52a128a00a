package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/metrics"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/stability"
	"github.com/rostrumhq/rostrum/wal"
)

// modeRate is the Result.Mode of the fixed-rate latency run.
const modeRate = "rostrum@rate"

// pipeline is one processor wired as `rostrum run` wires it (Redis sink,
// WAL, Prometheus metrics as observer) over one environment's topics,
// without the HTTP server and the lag watcher.
type pipeline struct {
	p      *processor.Processor
	store  *sink.Store
	rc     redis.UniversalClient
	hook   *roundTrips
	stages *stages
	log    *wal.Log
	walDir string
	topics processor.Topics

	base baseline // the processor's totals when the measurement began
	// tripsEnd: the sink's apply round trips when the measurement ended
	tripsEnd int64

	cancel context.CancelFunc
	done   chan error
	exited bool
	err    error // Run's error, once exited
}

// baseline holds the processor's running totals at one moment.
type baseline struct {
	records, published, dlq, retries, conflicts, events, dueTrips, trips int64
	cache                                                                sink.CacheStats
}

// mark starts the measurement now: counters reports totals since, and the
// stage times start from zero.
func (pl *pipeline) mark() {
	s := pl.p.Stats()
	pl.base = baseline{records: s.Records.Load(), published: s.Published.Load(), dlq: s.DLQ.Load(),
		retries: s.Retries.Load(), conflicts: s.Conflicts.Load(), events: s.Events.Load(),
		dueTrips: s.DueRoundTrips.Load(), cache: pl.store.CacheStats()}
	pl.base.trips, _ = pl.store.TripStats()
	pl.stages.batches.Store(0)
	pl.stages.batch.Store(0)
	pl.stages.wal.Store(0)
	pl.stages.apply.Store(0)
	pl.stages.store.Store(0)
	pl.stages.mu.Lock()
	pl.stages.acks = pl.stages.acks[:0]
	pl.stages.mu.Unlock()
}

// stages wraps the processor's observer (the Prometheus metrics, as in
// `rostrum run`) and adds up the time of the steps it reports.
type stages struct {
	processor.Observer
	batches, batch, wal, apply, store atomic.Int64 // count; nanoseconds

	mu   sync.Mutex
	acks []int64 // PublishLatency samples since mark, µs
}

// PublishLatency keeps the processor's own latency samples: from the Kafka
// timestamp of the room's oldest record in the batch to the broker's
// acknowledgement of the room's output.
func (s *stages) PublishLatency(took time.Duration) {
	s.mu.Lock()
	s.acks = append(s.acks, took.Microseconds())
	s.mu.Unlock()
	s.Observer.PublishLatency(took)
}

// ackLatency summarizes the PublishLatency samples since mark, in ms.
func (s *stages) ackLatency() *Latency {
	s.mu.Lock()
	defer s.mu.Unlock()
	return latencyOfMicros(s.acks)
}

func (s *stages) Batch(records int, took time.Duration) {
	s.batches.Add(1)
	s.batch.Add(int64(took))
	s.Observer.Batch(records, took)
}

func (s *stages) WALAppend(took time.Duration) {
	s.wal.Add(int64(took))
	s.Observer.WALAppend(took)
}

func (s *stages) RedisRoundTrip(op string, took time.Duration) {
	if op == "apply" {
		s.apply.Add(int64(took))
	} else {
		s.store.Add(int64(took))
	}
	s.Observer.RedisRoundTrip(op, took)
}

// means returns the mean milliseconds per batch of each step; "other" is
// the rest of the batch: decode, fold, merge, publish, commit.
func (s *stages) means() map[string]float64 {
	n := float64(s.batches.Load())
	if n == 0 {
		return nil
	}
	ms := func(v int64) float64 { return float64(v) / n / 1e6 }
	batch, wal, apply, store := s.batch.Load(), s.wal.Load(), s.apply.Load(), s.store.Load()
	return map[string]float64{"batch": ms(batch), "wal_append": ms(wal), "redis_apply": ms(apply),
		"redis_store": ms(store), "other": ms(batch - wal - apply - store)}
}

// startPipeline creates the processor of env; start runs it. Both label
// the processor's goroutines (its Kafka and Redis clients' included) with
// the processor's role (cpuShares).
func (b *runner) startPipeline(ctx context.Context, env string) (pl *pipeline, err error) {
	withRole(ctx, roleProcessor, func(ctx context.Context) { pl, err = b.newPipeline(ctx, env) })
	return pl, err
}

func (b *runner) newPipeline(ctx context.Context, env string) (*pipeline, error) {
	cfg := b.cfg
	pl := &pipeline{hook: &roundTrips{}, topics: processor.TopicsFor(b.prefix, env), done: make(chan error, 1)}
	m := metrics.New(env)
	pl.stages = &stages{Observer: m}
	pl.rc = b.newClient(0)
	pl.rc.AddHook(pl.hook)
	store, err := sink.New(pl.rc, sink.Config{Env: env, TopN: cfg.TopN, CacheMembers: cfg.StateCache, RoomsPerScript: cfg.RoomsPerScript, Logger: cfg.Logger})
	if err != nil {
		pl.close()
		return nil, err
	}
	pl.store = store
	if pl.walDir, err = os.MkdirTemp(cfg.WALDir, "rostrum-bench-wal-"); err != nil {
		pl.close()
		return nil, fmt.Errorf("bench: WAL directory: %w", err)
	}
	if pl.log, err = wal.Open(pl.walDir, wal.Config{Sync: cfg.WALSync, Logger: cfg.Logger, OnSync: m.ObserveFsync}); err != nil {
		pl.close()
		return nil, err
	}
	pc := processor.Config{
		Brokers:         b.brokers,
		Env:             env,
		TopicPrefix:     b.prefix,
		TopN:            cfg.TopN,
		MaxPollRecords:  cfg.MaxPollRecords,
		PipelineBatches: cfg.PipelineBatches,
		PollTopUp:       cfg.PollTopUp,
		AckDelay:        cfg.AckDelay,
		// The stable step as `rostrum run` takes it by default.
		Logger:    cfg.Logger,
		Observer:  pl.stages,
		KafkaOpts: b.kopts,
		Group:     processor.GroupConfig{Name: b.prefix + "rostrum-" + env}, Stable: processor.StableConfig{Dwell: stability.DefaultDwell, Grace: stability.DefaultGrace, Margin: stability.DefaultMargin},
	}
	if pl.p, err = processor.New(ctx, pc, store, pl.log); err != nil {
		pl.close()
		return nil, err
	}
	// The first batch would load the scripts after a NOSCRIPT reply; load
	// them now so that the measured batches show their steady round trips.
	if err := store.LoadScripts(ctx); err != nil {
		pl.close()
		return nil, err
	}
	return pl, nil
}

func (pl *pipeline) start(ctx context.Context) {
	ctx, pl.cancel = context.WithCancel(ctx)
	withRole(ctx, roleProcessor, func(ctx context.Context) {
		go func() { pl.done <- pl.p.Run(ctx) }()
	})
}

// setShares sets the processor's CPU per event from the process's and
// the roles' shares of it.
func (r *Result) setShares(by map[string]float64) {
	if by == nil {
		return
	}
	r.CPUShares = by
	r.ProcessorCPUSecondsPerMEvents = r.CPUSecondsPerMEvents * by[roleProcessor]
}

// stop stops the processor and returns Run's error.
func (pl *pipeline) stop() error {
	pl.cancel()
	if !pl.exited {
		pl.err, pl.exited = <-pl.done, true
	}
	return pl.err
}

// close releases the WAL, its directory and the Redis client.
func (pl *pipeline) close() {
	if pl.log != nil {
		_ = pl.log.Close()
	}
	if pl.walDir != "" {
		_ = os.RemoveAll(pl.walDir)
	}
	_ = pl.rc.Close()
}

// waitFor polls cond every millisecond until it holds. It fails when the
// processor stops, or when progress() has not changed for stall.
func (pl *pipeline) waitFor(ctx context.Context, what string, cond func() bool, progress func() int64, stall time.Duration) error {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	last, lastAt := progress(), time.Now()
	for !cond() {
		if n := progress(); n != last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > stall {
			return fmt.Errorf("bench: no progress for %s waiting for %s", stall, what)
		}
		select {
		case err := <-pl.done:
			pl.err, pl.exited = err, true
			if err == nil {
				err = errors.New("it returned")
			}
			return fmt.Errorf("bench: processor stopped while waiting for %s: %w", what, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func (pl *pipeline) waitAssigned(ctx context.Context) error {
	return pl.waitFor(ctx, "the group to assign partitions", func() bool { return pl.p.Assigned() > 0 },
		func() int64 { return 0 }, time.Minute)
}

func (pl *pipeline) waitRecords(ctx context.Context, n int64) error {
	records := func() int64 { return pl.p.Stats().Records.Load() }
	return pl.waitFor(ctx, fmt.Sprintf("%d records to be consumed", n), func() bool { return records() >= n }, records, time.Minute)
}

// counters copies the processor's totals into r and reports problems.
func (b *runner) counters(r *Result, pl *pipeline, wantEvents int64) {
	s, base := pl.p.Stats(), &pl.base
	r.Records, r.Published = s.Records.Load()-base.records, s.Published.Load()-base.published
	r.DLQ, r.Retries, r.Conflicts = s.DLQ.Load()-base.dlq, s.Retries.Load()-base.retries, s.Conflicts.Load()-base.conflicts
	r.Stages = pl.stages.means()
	r.AckLatency = pl.stages.ackLatency()
	// The hysteresis timer's passes run between batches and belong to none:
	// they are reported on their own, not in the per-batch figure.
	r.TimerRoundTrips = s.DueRoundTrips.Load() - base.dueTrips
	if cs := pl.store.CacheStats(); cs != (sink.CacheStats{}) {
		cs.Fast -= base.cache.Fast
		cs.Loaded -= base.cache.Loaded
		cs.Stale -= base.cache.Stale
		cs.Merged -= base.cache.Merged
		r.StateCache = &cs
	}
	if r.Batches > 0 {
		r.RoundTripsPerBatch = float64(pl.tripsEnd-base.trips) / float64(r.Batches)
		r.PipelinesPerBatch = float64(r.RoundTrips-r.TimerRoundTrips) / float64(r.Batches)
	}
	if r.DLQ > 0 {
		b.problem("%s: %d records went to the DLQ", r.Mode, r.DLQ)
	}
	if r.Retries > 0 {
		b.problem("%s: %d batches were retried", r.Mode, r.Retries)
	}
	if ev := s.Events.Load() - base.events; ev != wantEvents {
		b.problem("%s: the processor applied %d events, %d were produced", r.Mode, ev, wantEvents)
	}
}

// rostrum runs the real processor flat out over the preloaded records.
func (b *runner) rostrum(ctx context.Context) (Result, error) {
	w := b.w
	if err := b.flush(ctx); err != nil {
		return Result{}, err
	}
	pl, err := b.startPipeline(ctx, envFlat)
	if err != nil {
		return Result{}, err
	}
	defer pl.close()
	m := meter{admin: b.admin, hook: pl.hook}
	before, err := m.snap(ctx)
	if err != nil {
		return Result{}, err
	}
	shares, err := cpuShares(b.cfg.CPUProfile)
	if err != nil {
		return Result{}, err
	}
	defer func() { _, _ = shares() }()
	pl.start(ctx)
	defer func() { _ = pl.stop() }()
	if err := pl.waitAssigned(ctx); err != nil {
		return Result{}, err
	}
	start := time.Now()
	if err := pl.waitRecords(ctx, int64(len(w.Records))); err != nil {
		return Result{}, err
	}
	elapsed := time.Since(start)
	by, err := shares()
	if err != nil {
		return Result{}, err
	}
	after, err := m.snap(ctx)
	if err != nil {
		return Result{}, err
	}
	pl.tripsEnd, _ = pl.store.TripStats() // before the stop's last ack flush
	if err := pl.stop(); err != nil {
		return Result{}, fmt.Errorf("bench: processor: %w", err)
	}
	r := Result{Mode: ModeRostrum, Events: int64(len(w.Events)), Seconds: elapsed.Seconds()}
	r.EventsPerSec = float64(r.Events) / r.Seconds
	fill(&r, before, after, pl.p.Stats().Batches.Load())
	r.setShares(by)
	m.fillNodes(&r, before, after)
	b.counters(&r, pl, r.Events)
	if err := b.memory(ctx, &r, envFlat, before.redis.usedMemory); err != nil {
		return Result{}, err
	}
	walBytes, err := dirBytes(pl.walDir)
	if err != nil {
		return Result{}, fmt.Errorf("bench: WAL size: %w", err)
	}
	r.WALBytesPerEvent = float64(walBytes) / float64(r.Events)
	lat, err := outputLatencies(ctx, b.kafka(), pl.topics.TopN, 0)
	if err != nil {
		return Result{}, err
	}
	r.Latency = latencyOf(lat)
	if b.cfg.MemProfile != nil {
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(b.cfg.MemProfile, 0); err != nil {
			return Result{}, fmt.Errorf("bench: --memprofile: %w", err)
		}
	}
	return r, nil
}

// memory sets r's Redis memory per ranked member of env's rooms.
func (b *runner) memory(ctx context.Context, r *Result, env string, usedBefore int64) error {
	in, _, err := b.admin.info(ctx)
	if err != nil {
		return err
	}
	keys := make([]string, len(b.w.RoomIDs))
	for i, id := range b.w.RoomIDs {
		keys[i] = sink.RoomKeys(env, id).Ranking
	}
	if r.RankedMembers, err = rankedMembers(ctx, b.admin.data, keys); err != nil {
		return err
	}
	if r.RankedMembers > 0 {
		r.RedisBytesPerMember = float64(in.usedMemory-usedBefore) / float64(r.RankedMembers)
	}
	r.RedisKeys, err = keyKinds(ctx, b.admin)
	return err
}

// rate runs the processor while a producer offers the workload's records
// at a fixed rate of events, each record stamped with its produce time, and
// measures the latency from that time to the publication of the outputs.
func (b *runner) rate(ctx context.Context, rate float64) (Result, error) {
	w := b.w
	// This goroutine offers the load, and the producer it creates inherits
	// the label (cpuShares).
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels(labelRole, roleLoad)))
	defer pprof.SetGoroutineLabels(ctx)
	if err := b.flush(ctx); err != nil {
		return Result{}, err
	}
	pl, err := b.startPipeline(ctx, envRate)
	if err != nil {
		return Result{}, err
	}
	defer pl.close()
	prod, err := newProducer(b.kafka(), w, pl.topics, 0)
	if err != nil {
		return Result{}, err
	}
	defer prod.close()
	pl.start(ctx)
	defer func() { _ = pl.stop() }()
	if err := pl.waitAssigned(ctx); err != nil {
		return Result{}, err
	}
	// offer sends records from next on, at rate, for d; it returns the
	// events and records sent.
	next := 0
	offer := func(d time.Duration, limit int) (events, records int64) {
		start := time.Now()
		for ; next < limit; next++ {
			// Sleep only when more than a millisecond ahead: records go out
			// in small bursts, on schedule on average.
			due := start.Add(time.Duration(float64(events) / rate * float64(time.Second)))
			if d := time.Until(due); d > time.Millisecond {
				time.Sleep(d)
			}
			now := time.Now()
			if now.Sub(start) >= d {
				break
			}
			prod.send(ctx, next, now)
			events += int64(w.Records[next].n)
			records++
		}
		return events, records
	}
	// The warm-up runs the processor at the rate before anything is
	// measured, so that the run measures a processor in its steady state
	// (its state cache filled), not one that has just started.
	// It takes at most half the workload.
	_, warm := offer(b.cfg.RateWarmup, len(w.Records)/2)
	if err := prod.flush(ctx); err != nil {
		return Result{}, err
	}
	if err := pl.waitRecords(ctx, warm); err != nil {
		return Result{}, err
	}
	m := meter{admin: b.admin, hook: pl.hook}
	before, err := m.snap(ctx)
	if err != nil {
		return Result{}, err
	}
	batchesBefore := pl.p.Stats().Batches.Load()
	var prof io.Writer
	if !b.rateProfiled {
		prof, b.rateProfiled = b.cfg.RateCPUProfile, b.cfg.RateCPUProfile != nil
	}
	shares, err := cpuShares(prof)
	if err != nil {
		return Result{}, err
	}
	defer func() { _, _ = shares() }()
	memProfiling := b.cfg.RateMemProfile != nil && !b.rateMemProfiled
	if memProfiling {
		b.rateMemProfiled = true
		if err := writeAllocs(b.cfg.RateMemProfileBase); err != nil {
			return Result{}, fmt.Errorf("bench: --rate-memprofile: %w", err)
		}
	}
	pl.mark()
	start := time.Now()
	events, records := offer(b.cfg.RateDuration, len(w.Records))
	if err := prod.flush(ctx); err != nil {
		return Result{}, err
	}
	if err := pl.waitRecords(ctx, warm+records); err != nil {
		return Result{}, err
	}
	elapsed := time.Since(start)
	by, err := shares()
	if err != nil {
		return Result{}, err
	}
	if memProfiling {
		if err := writeAllocs(b.cfg.RateMemProfile); err != nil {
			return Result{}, fmt.Errorf("bench: --rate-memprofile: %w", err)
		}
	}
	after, err := m.snap(ctx)
	if err != nil {
		return Result{}, err
	}
	pl.tripsEnd, _ = pl.store.TripStats() // before the stop's last ack flush
	if err := pl.stop(); err != nil {
		return Result{}, fmt.Errorf("bench: processor: %w", err)
	}
	r := Result{Mode: modeRate, Events: events, Seconds: elapsed.Seconds(), OfferedRate: rate, WarmupSeconds: b.cfg.RateWarmup.Seconds()}
	r.EventsPerSec = float64(events) / r.Seconds
	fill(&r, before, after, pl.p.Stats().Batches.Load()-batchesBefore)
	r.setShares(by)
	m.fillNodes(&r, before, after)
	b.counters(&r, pl, events)
	lat, err := outputLatencies(ctx, b.kafka(), pl.topics.TopN, start.UnixMilli())
	if err != nil {
		return Result{}, err
	}
	r.Latency = latencyOf(lat)
	if next == len(w.Records) {
		b.note("%s: the workload ran out after %.1f s of the %s asked; pass more --events for a longer run",
			modeRate, elapsed.Seconds(), b.cfg.RateDuration)
	}
	return r, nil
}

// writeAllocs writes the allocation profile so far to w (nothing when w is
// nil), after a GC so that it is up to date.
func writeAllocs(w io.Writer) error {
	if w == nil {
		return nil
	}
	runtime.GC()
	return pprof.Lookup("allocs").WriteTo(w, 0)
}
