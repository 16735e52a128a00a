package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
)

// Processor consumes one environment's callback topics and keeps its meeting
// rankings. Run it once; it is not safe to call Run concurrently.
type Processor struct {
	cfg    Config
	topics Topics
	cl     *kgo.Client
	store  Store // chunked (chunk.go), over refusals
	wal    WAL   // nil: none
	dec    *codec.Decoder
	lg     *zap.Logger
	stats  Stats

	group    groupMembership  // its place in the consumer group (group.go)
	pipe     pipeline         // the batch pipeline's folders and pace (pipeline.go)
	strategy stableStrategy   // the stable step and its timer (stable.go, due.go)
	acks     ackQueue         // outputs published, waiting to be acknowledged in Redis (acks.go)
	commits  commits          // what was committed, and what failed to be (commit.go, prune.go)
	refusals *refusalRecorder // under store's chunking: the members the cap refused (members.go)
	health   health           // back-pressure: the batch in hand failing (backpressure.go)
	gen      generation       // the Redis data set, for recovery (generation.go)
	boards   boardStage       // the leaderboards' work (boards.go); noBoards without boards

	polled time.Time // when the last poll returned records; zero after an empty one (Config.PollTopUp)
}

// Stats are running totals, safe to read while the processor runs.
type Stats struct {
	Batches   atomic.Int64 // poll batches completed
	Records   atomic.Int64 // records consumed
	Events    atomic.Int64 // events applied (decoded and accepted)
	DLQ       atomic.Int64 // records sent to the DLQ
	Ignored   atomic.Int64 // events skipped for their unknown type (Config.UnknownTypes)
	Published atomic.Int64 // output records published (including republished pending ones)
	Conflicts atomic.Int64 // stable-list compare-and-set retries
	DueSteps  atomic.Int64 // rooms stepped by the timer (a dwell or grace ended without events)
	// DueRoundTrips are the Redis round trips of the timer's passes, which
	// run between batches and belong to none.
	DueRoundTrips atomic.Int64
	Retries       atomic.Int64 // failed batch attempts retried
	// Overlapped counts the batches whose stage 1 (poll, decode, WAL
	// append) ended while the batch before was still in stage 2: the batch
	// pipeline at work (Config.PipelineBatches).
	Overlapped  atomic.Int64
	RedisResets atomic.Int64 // times Redis was found empty and rebuilt

	BoardEvents    atomic.Int64 // board events counted by the boards
	BoardSaturated atomic.Int64 // board score updates whose total exceeded max-total
}

// New connects to Kafka and checks the topics, but consumes nothing until Run.
// It fails when the brokers cannot be reached or a topic is missing (unless
// CreateTopics is set).
func New(ctx context.Context, cfg Config, store Store, w WAL) (*Processor, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Processor{
		cfg:      cfg,
		topics:   TopicsFor(cfg.TopicPrefix, cfg.Env),
		store:    store,
		wal:      w,
		dec:      codec.NewDecoder(cfg.Decode),
		lg:       cfg.Logger,
		strategy: newStableStrategy(&cfg),
	}
	p.boards = newBoardStage(p, false)
	// The member a crash of the process before left in the group leaves
	// before this one joins (incarnation.go).
	p.evictPrevious(ctx)
	// The client runs on a context of its own, which closeClient cancels
	// at the shutdown deadline: kgo issues JoinGroup and SyncGroup on it,
	// and its Close waits for them.
	clientCtx, cancelClient := context.WithCancel(context.Background())
	p.group.cancel = cancelClient
	opts := []kgo.Opt{
		kgo.WithContext(clientCtx),
		kgo.SessionTimeout(cfg.Group.SessionTimeout),
		kgo.HeartbeatInterval(min(3*time.Second, cfg.Group.SessionTimeout/10)),
		kgo.RebalanceTimeout(cfg.Group.RebalanceTimeout),
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.Group.Name),
		kgo.ConsumeTopics(p.topics.Inputs()...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), // murmur2 by key: one room, one output partition
		kgo.ProducerLinger(0),
	}
	opts = append(opts, p.rebalanceCallbacks()...)
	if cfg.Group.InstanceID != "" {
		// Static membership: a restart within the session timeout gets
		// its partitions back without a rebalance of the group.
		opts = append(opts, kgo.InstanceID(cfg.Group.InstanceID))
	} else if cfg.Group.MemberFile != "" {
		p.group.member = &memberRecorder{path: cfg.Group.MemberFile, group: cfg.Group.Name, lg: cfg.Logger}
		opts = append(opts, kgo.WithHooks(p.group.member))
	}
	opts = append(append(opts, cfg.KafkaOpts...), cfg.ConsumerOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		cancelClient()
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	p.cl = cl
	if p.group.member != nil {
		p.group.member.cl.Store(cl)
	}
	// A failure from here on (or a stop: ctx cancelled while starting)
	// closes the client, which may be joining the group already.
	fail := func(err error) (*Processor, error) {
		p.leave(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := p.checkTopics(ctx); err != nil {
		return fail(err)
	}
	gen, err := store.EnsureGeneration(ctx)
	if err != nil {
		return fail(err)
	}
	store.AdoptGeneration(gen)
	if err := p.loadGeneration(gen); err != nil {
		return fail(err)
	}
	if err := p.boards.adopt(ctx, gen, false); err != nil {
		return fail(err)
	}
	p.refusals = &refusalRecorder{Store: store}
	p.store = chunked(p.refusals, cfg.MaxRoomsPerApply)
	return p, nil
}

// checkTopics verifies the brokers answer and every topic exists, creating
// missing ones from the specifications (topics.go) when configured.
func (p *Processor) checkTopics(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	adm := kadm.NewClient(p.cl)
	specs := p.cfg.TopicSpecs()
	if p.cfg.TopicSetup.Create {
		created, err := CreateTopics(ctx, adm, specs, p.cfg.TopicSetup.ReplicationFactor)
		if err != nil {
			return fmt.Errorf("kafka brokers %v: %w", p.cfg.Brokers, err)
		}
		if len(created) > 0 {
			p.lg.Info("topics created", zap.Strings("topics", created))
		}
		return p.checkCompacted(ctx, adm, specs)
	}
	all := make([]string, len(specs))
	for i, s := range specs {
		all[i] = s.Name
	}
	states, err := DescribeTopics(ctx, adm, all...)
	if err != nil {
		return fmt.Errorf("kafka brokers %v unreachable: %w", p.cfg.Brokers, err)
	}
	var missing []string
	for _, st := range states {
		if !st.Exists {
			missing = append(missing, st.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kafka topics missing: %v (create them, or start with --create-topics)", missing)
	}
	return p.checkCompacted(ctx, adm, specs)
}

func (p *Processor) checkCompacted(ctx context.Context, adm *kadm.Client, specs []TopicSpec) error {
	if !p.cfg.TopicSetup.RequireCompactedOutput {
		return nil
	}
	if err := CheckOutputCompacted(ctx, adm, specs); err != nil {
		return fmt.Errorf("%w (or start with --allow-uncompacted-output)", err)
	}
	return nil
}

// Stats returns the running totals.
func (p *Processor) Stats() *Stats { return &p.stats }

// Topics returns the topic names the processor uses.
func (p *Processor) Topics() Topics { return p.topics }

// Standby reports whether the processor has joined its group without being
// assigned a partition.
func (p *Processor) Standby() bool { return p.group.joined.Load() && p.Assigned() == 0 }

// Assigned returns how many input partitions this processor owns now.
func (p *Processor) Assigned() int { return int(p.group.assigned.Load()) }

// Run consumes until ctx is cancelled, then finishes the batches in hand (at
// most two, pipeline.go), commits them, and leaves the group, within
// Config.ShutdownTimeout of the cancel: a batch that cannot finish by then
// is abandoned (uncommitted, so the group redelivers it) and Run returns an
// error saying so; a group or broker that does not answer the leave is not
// waited for. It returns nil after a clean stop.
func (p *Processor) Run(ctx context.Context) error {
	drain, stopDrain := drainContext(ctx, p.cfg.ShutdownTimeout)
	defer stopDrain()
	defer p.leave(drain)
	if err := p.rebuildAtStart(ctx); err != nil || ctx.Err() != nil {
		return err // nil: stopped cleanly during the rebuild
	}
	// The boards' expiry and settlement run beside the loop (boards.go).
	boardsCtx, stopBoards := context.WithCancel(ctx)
	var boardLoops sync.WaitGroup
	boardLoops.Go(func() { p.boards.expire(boardsCtx) })
	boardLoops.Go(func() { p.boards.settle(boardsCtx) })
	defer func() { stopBoards(); boardLoops.Wait() }()
	p.lg.Info("consuming", zap.String("env", p.cfg.Env), zap.String("group", p.cfg.Group.Name),
		zap.Strings("topics", p.topics.Inputs()))
	// The batch pipeline (pipeline.go): stage 1 here, stage 2 of the
	// batch before on its own goroutine, at most one batch ahead.
	var fl *flight
	for {
		p.pace(ctx, fl)
		fetches := p.poll(ctx)
		if fetches.IsClientClosed() {
			_, err := p.land(&fl)
			return err
		}
		fetches.EachError(func(t string, part int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				p.lg.Warn("fetch error", zap.String("topic", t), zap.Int32("partition", part), zap.Error(err))
			}
		})
		recs := fetches.Records()
		// The batch is finished even when ctx is cancelled meanwhile (drain
		// on shutdown); only retries of a failing batch stop early. A poll
		// larger than MaxBatchBytes is processed as several batches, in
		// order, so that one WAL frame never outgrows the log's limit.
		for rest := recs; len(rest) > 0; {
			n := batchLen(rest, p.cfg.MaxBatchBytes)
			b := p.nextBatch(rest[:n])
			var rewound bool
			var err error
			if !p.pipelined() {
				rewound, err = p.land(&fl)
			}
			if err == nil {
				if err = p.prepareWithRetry(ctx, drain, b); err != nil {
					_, _ = p.land(&fl)
				}
			}
			if err == nil && fl != nil {
				select {
				case <-fl.finished:
				default:
					p.stats.Overlapped.Add(1)
				}
			}
			if err == nil {
				var r bool
				r, err = p.land(&fl)
				rewound = rewound || r
			}
			if err != nil {
				p.cl.AllowRebalance()
				return err
			}
			// Polled while the batch before rebuilt Redis and rewound the
			// partitions: applied, but not committed (pipeline.go).
			b.afterRewind = rewound
			fl = p.launch(ctx, drain, b)
			rest = rest[n:]
		}
		// Keep one batch in stage 2 while records flow; empty the pipeline
		// when they stop, on shutdown, and when a rebalance waits: only an
		// empty pipeline may allow it.
		if len(recs) > 0 && ctx.Err() == nil && !p.group.rebalanceWaiting.Load() && p.pipelined() {
			continue
		}
		if _, err := p.land(&fl); err != nil {
			p.cl.AllowRebalance()
			return err
		}
		if len(recs) == 0 && ctx.Err() == nil {
			p.retryCommits(ctx) // the partitions are still this processor's
		}
		p.group.rebalanceWaiting.Store(false)
		p.cl.AllowRebalance()
		if ctx.Err() != nil {
			p.flushAcks(drain)
			return nil
		}
		p.maybeStepDue(ctx)
		if len(recs) == 0 {
			p.flushAcks(ctx)
			p.checkIdle(ctx)
		}
	}
}

// drainContext returns a context that outlives ctx by grace: it is not
// cancelled with ctx, but grace after ctx is done. The work of a shutdown
// (the batch in flight, the commit, leaving the group) runs under it.
func drainContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	drain, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var timer *time.Timer
	var mu sync.Mutex
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		timer = time.AfterFunc(grace, cancel)
		mu.Unlock()
	})
	return drain, func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}

// batchLen returns how many of recs, at least one, fit in maxBytes of keys
// and values.
func batchLen(recs []*kgo.Record, maxBytes int) int {
	size := 0
	for i, r := range recs {
		size += len(r.Key) + len(r.Value)
		if size > maxBytes && i > 0 {
			return i
		}
	}
	return len(recs)
}

// poll waits for records; with the hysteresis it waits at most DueInterval,
// so that the timer runs while no records arrive.
func (p *Processor) poll(ctx context.Context) kgo.Fetches {
	// A poll waits at most GenerationCheckEvery, so that an idle processor
	// still notices that Redis lost its data (generation.go), and at most
	// DueInterval with the hysteresis, so that due rooms are stepped.
	wait := p.cfg.GenerationCheckEvery
	if p.strategy.hyst != nil {
		wait = min(wait, p.cfg.Stable.DueInterval)
	}
	// How long the batch before took, from its poll to this one (0: there
	// was none, or an empty poll came between).
	var took time.Duration
	if !p.polled.IsZero() {
		took = time.Since(p.polled)
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	fetches := p.cl.PollRecords(pctx, p.cfg.MaxPollRecords)
	n := fetches.NumRecords()
	if n == 0 {
		p.polled = time.Time{}
		return fetches
	}
	p.polled = time.Now()
	// Top up only after a batch that took a while (four times the wait):
	// after a short one few records wait in the broker, and a top-up that
	// finds none costs its whole wait.
	if p.cfg.PollTopUp <= 0 || took < 4*p.cfg.PollTopUp || n >= p.cfg.MaxPollRecords || ctx.Err() != nil {
		return fetches
	}
	// The records that arrived during the batch before (Config.PollTopUp):
	// draining the buffered fetch made the client send the next one. They
	// follow the first poll's in each partition, so the batch keeps the
	// partitions' order.
	tctx, tcancel := context.WithTimeout(ctx, p.cfg.PollTopUp)
	defer tcancel()
	return append(fetches, p.cl.PollRecords(tctx, p.cfg.MaxPollRecords-n)...)
}

// processWithRetry runs stage 2 of a prepared batch until it succeeds.
// Every step is idempotent, so a failed attempt is simply repeated, with
// exponential backoff and jitter, without polling more (memory stays
// bounded: at most the one batch prepared behind it). An attempt runs under
// drain, so a shutdown (ctx cancelled) lets it finish; retries stop when ctx
// is cancelled, and the attempt itself when drain ends. The batch's offsets
// are then left uncommitted and the group redelivers it.
func (p *Processor) processWithRetry(ctx, drain context.Context, b *batch) error {
	backoff := p.cfg.Retry.Backoff
	start := time.Now()
	for {
		err := p.finishRebuild(drain, b)
		if err == nil {
			err = b.run(drain)
		}
		if err == nil {
			p.health.recovered()
			p.resumeFetching()
			p.stats.Batches.Add(1)
			p.cfg.Observer.Batch(len(b.recs), b.prepTook+time.Since(start))
			return nil
		}
		if backoff, err = p.retryAfter(ctx, err, len(b.recs), backoff); err != nil {
			return err
		}
	}
}

// Ready reports whether the processor does its job: no batch has been
// failing for long (see backpressure.go), it has joined the consumer group,
// and Redis and Kafka answer. A member that joined and got no partition
// (more instances than partitions) is a standby and is ready: it takes
// partitions over when another member leaves. It backs /readyz; liveness
// (/healthz) only says the process serves HTTP.
//
// Its error is a *NotReady naming the class of what is not ready.
func (p *Processor) Ready(ctx context.Context) error {
	if err := p.health.unready(&p.cfg, time.Now()); err != nil {
		return &NotReady{NotReadyBatches, err}
	}
	if !p.group.joined.Load() {
		return &NotReady{NotReadyGroup, errors.New("consumer group not joined (yet)")}
	}
	if err := p.store.Ping(ctx); err != nil {
		return &NotReady{NotReadyRedis, err}
	}
	if err := p.cl.Ping(ctx); err != nil {
		return &NotReady{NotReadyKafka, err}
	}
	return nil
}

// Group returns the consumer group's name.
func (p *Processor) Group() string { return p.cfg.Group.Name }
