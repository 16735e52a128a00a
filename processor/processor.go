package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/stability"
)

// Processor consumes one environment's callback topics and keeps its meeting
// rankings. Run it once; it is not safe to call Run concurrently.
type Processor struct {
	cfg    Config
	topics Topics
	cl     *kgo.Client
	store  Store
	log    Log
	dec    *codec.Decoder
	lg     *zap.Logger
	// cancelClient ends the client's context: requests in flight, a
	// JoinGroup held by the coordinator included, fail at once.
	cancelClient context.CancelFunc
	member       *memberRecorder // records the group member id; nil without Config.MemberFile or with InstanceID

	hyst      *stability.Hysteresis // nil: the seed merge
	dropMuted bool                  // audio leads the score (after spotlight, screen share): a muted member leaves the shown list at once
	lastDue   time.Time             // last look for due rooms

	acks ackQueue // outputs published, waiting to be acknowledged in Redis (acks.go)
	// failedCommits: offsets whose commit failed, committed again when idle
	// (commit.go)
	failedCommits failedCommits
	folds         [2]folder // poll batches: one in stage 2, one prepared (pipeline.go)
	nextFold      int       // index in folds of the next poll batch
	// The last batch's stage 2 (from its launch to its end) and prepare
	// times, to pace the next poll (pipeline.go); Run goroutine only.
	lastStage2, lastPrepare time.Duration
	lastPrune               time.Time
	walSeq                  uint64 // last WAL sequence whose batch was committed
	stats                   Stats
	assigned                atomic.Int64
	joined                  atomic.Bool      // a group generation was joined (with or without partitions) and not lost since
	health                  health           // back-pressure state (backpressure.go)
	gen                     generation       // Redis data-set tracking (generation.go)
	refusals                *refusalRecorder // under p.store's chunking: the members the cap refused
	// rebalanceWaiting is set when the client holds a rebalance back for
	// the batches in hand (kgo.OnPartitionsCallbackBlocked); Run then
	// empties the pipeline and allows it.
	rebalanceWaiting atomic.Bool

	scratch     stableScratch // reused by stable (stable.go)
	assignments atomic.Int64  // partition assignment changes, for the boards' carry
	boards      boardStage    // the leaderboards' work (boards.go); noBoards without boards
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
func New(ctx context.Context, cfg Config, store Store, log Log) (*Processor, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Processor{
		cfg:    cfg,
		topics: TopicsFor(cfg.TopicPrefix, cfg.Env),
		store:  store,
		log:    log,
		dec:    codec.NewDecoder(cfg.Decode),
		lg:     cfg.Logger,
		hyst:   cfg.hysteresis(),
	}
	p.dropMuted = audioLeads(cfg.Meeting.Rules())
	p.boards = newBoardStage(p, false)
	// The member a crash of the process before left in the group leaves
	// before this one joins (incarnation.go).
	p.evictPrevious(ctx)
	// The client runs on a context of its own, which closeClient cancels
	// at the shutdown deadline: kgo issues JoinGroup and SyncGroup on it,
	// and its Close waits for them.
	clientCtx, cancelClient := context.WithCancel(context.Background())
	p.cancelClient = cancelClient
	opts := []kgo.Opt{
		kgo.WithContext(clientCtx),
		kgo.SessionTimeout(cfg.SessionTimeout),
		kgo.HeartbeatInterval(min(3*time.Second, cfg.SessionTimeout/10)),
		kgo.RebalanceTimeout(cfg.RebalanceTimeout),
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(p.topics.Inputs()...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), // murmur2 by key: one room, one output partition
		kgo.ProducerLinger(0),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			// Called after every join, also when nothing is assigned: a
			// member beyond the partition count is a standby.
			p.joined.Store(true)
			if p.member != nil {
				p.member.record()
			}
			p.assigned.Add(int64(count(a)))
			p.assignments.Add(1)
			p.cfg.Observer.Rebalance("assigned", count(a))
			p.lg.Info("partitions assigned", zap.Any("partitions", a))
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			p.assigned.Add(-int64(count(r)))
			p.assignments.Add(1)
			p.failedCommits.forget(r)
			p.cfg.Observer.Rebalance("revoked", count(r))
			p.lg.Info("partitions revoked", zap.Any("partitions", r))
		}),
		kgo.OnPartitionsCallbackBlocked(func(context.Context, *kgo.Client) { p.rebalanceWaiting.Store(true) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			p.joined.Store(false)
			p.assigned.Add(-int64(count(l)))
			p.assignments.Add(1)
			p.failedCommits.forget(l)
			p.cfg.Observer.Rebalance("lost", count(l))
			p.lg.Warn("partitions lost", zap.Any("partitions", l))
		}),
	}
	if cfg.InstanceID != "" {
		// Static membership: a restart within the session timeout gets
		// its partitions back without a rebalance of the group.
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	} else if cfg.MemberFile != "" {
		p.member = &memberRecorder{path: cfg.MemberFile, group: cfg.Group, lg: cfg.Logger}
		opts = append(opts, kgo.WithHooks(p.member))
	}
	opts = append(append(opts, cfg.KafkaOpts...), cfg.ConsumerOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		cancelClient()
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	p.cl = cl
	if p.member != nil {
		p.member.cl.Store(cl)
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

func count(m map[string][]int32) (n int) {
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

// checkTopics verifies the brokers answer and every topic exists, creating
// missing ones from the specifications (topics.go) when configured.
func (p *Processor) checkTopics(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	adm := kadm.NewClient(p.cl)
	specs := p.cfg.TopicSpecs()
	if p.cfg.CreateTopics {
		created, err := CreateTopics(ctx, adm, specs, p.cfg.ReplicationFactor)
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
	if !p.cfg.RequireCompactedOutput {
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
func (p *Processor) Standby() bool { return p.joined.Load() && p.Assigned() == 0 }

// Assigned returns how many input partitions this processor owns now.
func (p *Processor) Assigned() int { return int(p.assigned.Load()) }

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
	p.lg.Info("consuming", zap.String("env", p.cfg.Env), zap.String("group", p.cfg.Group),
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
		if len(recs) > 0 && ctx.Err() == nil && !p.rebalanceWaiting.Load() && p.pipelined() {
			continue
		}
		if _, err := p.land(&fl); err != nil {
			p.cl.AllowRebalance()
			return err
		}
		if len(recs) == 0 && ctx.Err() == nil {
			p.retryCommits(ctx) // the partitions are still this processor's
		}
		p.rebalanceWaiting.Store(false)
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

// leave leaves the group and closes the client, all by the end of drain
// (or ShutdownTimeout from now, after a failure that is not a cancel) plus
// at most a second, whatever the group does (docs/DESIGN.md §3.8, §3.9):
//
//   - A joined member leaves through the client, which first lets a
//     rebalance in progress finish (so that its revocation runs); a group
//     waiting for members that died holds that rebalance for up to the
//     rebalance timeout, so the leave is waited for only until the
//     deadline.
//   - A member still joining (no assignment yet) does not wait: kgo sends
//     the JoinGroup on the client's context and its Close waits for the
//     answer, which the coordinator may hold for the rebalance timeout.
//
// Whatever was not done by the deadline is cut short: the client's context
// is cancelled (its requests in flight fail) and the member leaves by its
// id (a static member by its instance id) through a client of its own, so
// that it does not stay in the group as a dead member until the coordinator
// expires it. A static member that had joined does not leave: its restart
// takes its place (KIP-345).
func (p *Processor) leave(drain context.Context) {
	p.cl.AllowRebalance()
	ctx, cancel := context.WithTimeout(drain, p.cfg.ShutdownTimeout)
	defer cancel()
	joined := p.joined.Load()
	if !joined {
		cancel() // joining: nothing to revoke, no reason to wait
	}
	err := p.cl.LeaveGroupContext(ctx)
	if err == nil {
		if p.member != nil {
			p.member.forget()
		}
		p.closeClient()
		return
	}
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		p.lg.Warn("leaving the group", zap.Error(err))
	}
	member, _ := p.cl.GroupMetadata()
	p.cancelClient()
	p.closeClient()
	static := p.cfg.InstanceID != ""
	switch {
	case static && joined:
		return // a static member keeps its place for its restart (KIP-345)
	case member == "" && !static:
		return // not a member yet
	}
	if p.leaveAs(member) && p.member != nil {
		p.member.forget()
	}
}

// closeTimeout bounds the client's Close after the leave, and
// leaveAsTimeout the LeaveGroup sent by member id when the client could
// not leave in time: together at most a second past the deadline.
const (
	closeTimeout   = 300 * time.Millisecond
	leaveAsTimeout = 700 * time.Millisecond
)

// closeClient closes the client, waiting closeTimeout at most; its context
// is cancelled then, which ends whatever Close still waits for.
func (p *Processor) closeClient() {
	closed := make(chan struct{})
	go func() { p.cl.Close(); close(closed) }()
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		p.cancelClient()
		p.lg.Warn("kafka client not closed in time: its requests in flight are cut short")
	}
	p.cancelClient()
}

// leaveAs sends a LeaveGroup for member through a client of its own, and
// reports whether the group no longer has it.
func (p *Processor) leaveAs(member string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), leaveAsTimeout)
	defer cancel()
	err := leaveGroupAs(ctx, p.cfg, member, "rostrum stopping while the group was rebalancing")
	switch {
	case err == nil:
		p.lg.Info("left the group through a client of its own", zap.String("member_id", member), zap.String("instance_id", p.cfg.InstanceID))
		return true
	case errors.Is(err, kerr.UnknownMemberID):
		return true
	default:
		p.lg.Warn("group not left: the coordinator expires this member after the session timeout",
			zap.String("member_id", member), zap.Error(err))
		return false
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
	if p.hyst != nil {
		wait = min(wait, p.cfg.DueInterval)
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return p.cl.PollRecords(pctx, p.cfg.MaxPollRecords)
}

// processWithRetry runs stage 2 of a prepared batch until it succeeds.
// Every step is idempotent, so a failed attempt is simply repeated, with
// exponential backoff and jitter, without polling more (memory stays
// bounded: at most the one batch prepared behind it). An attempt runs under
// drain, so a shutdown (ctx cancelled) lets it finish; retries stop when ctx
// is cancelled, and the attempt itself when drain ends. The batch's offsets
// are then left uncommitted and the group redelivers it.
func (p *Processor) processWithRetry(ctx, drain context.Context, b *batch) error {
	backoff := p.cfg.RetryBackoff
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
	if !p.joined.Load() {
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
func (p *Processor) Group() string { return p.cfg.Group }
