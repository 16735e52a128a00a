package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/control"
	"github.com/rostrumhq/rostrum/hints"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/config"
	"github.com/rostrumhq/rostrum/internal/httpserve"
	"github.com/rostrumhq/rostrum/metrics"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/stability"
	"github.com/rostrumhq/rostrum/wal"
	"github.com/rostrumhq/rostrum/web"
)

// runFlags are the settings of `rostrum run` (and of the pipeline inside
// `rostrum demo`). Each is also ROSTRUM_<NAME> and a key of --config.
type runFlags struct {
	brokers, redis, env, group, topicPrefix string
	topN                                    int
	walDir, walSync                         string
	walMaxAge                               time.Duration
	walMaxBytes                             int64
	walSegmentBytes                         int64
	routes                                  routeFlags
	roomTTL                                 time.Duration
	maxPollRecords                          int
	createTopics                            bool
	scoreEpoch                              string
	ranking                                 string
	unknownTypes                            string
	maxFutureSkew                           time.Duration
	maxRecordBytes, maxEvents               int
	logFormat, logLevel                     string
	http                                    string
	lagEvery                                time.Duration
	stability                               string
	dwell, grace, dueInterval               time.Duration
	shutdownTimeout                         time.Duration
	margin                                  int
	config                                  string
	sec                                     cli.Security
	boards                                  []boarddef.Config // the config file's boards: list
	boardsSource                            string            // where boards came from, for errors
	hints                                   []hints.Rule      // the config file's hints: list (hints.go)
	hintChain                               *hints.Chain      // hints compiled by pipelineConfig; nil: none
	limits                                  limitFlags        // limits.go
	control                                 controlFlags      // control.go
	ops                                     opsFlags          // ops.go
	boardAdmin                              boardAdminFlags   // boardadmin.go
	apiGuard                                apiGuardFlags     // apiguard.go
	httpTLS                                 listenTLSFlags    // --http-tls-cert, --http-tls-key (reload.go)
	streams                                 streamFlags       // streams.go

	warnings []string // found while parsing; logged by logger
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.brokers, "brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	fs.StringVar(&f.redis, "redis", "127.0.0.1:6379", "Redis address; several comma-separated addresses mean a Redis Cluster; exclusive with --redis-sentinel-master")
	fs.StringVar(&f.env, "env", "prod", "environment served (prod, test, gray, demo, …): selects topics {env}.callbacks.*")
	fs.StringVar(&f.group, "group", "", "Kafka consumer group (default rostrum-{env})")
	fs.StringVar(&f.topicPrefix, "topic-prefix", "", "prefix of every topic name")
	fs.IntVar(&f.topN, "top-n", 7, "length of the stable top list, 1..100")
	fs.StringVar(&f.walDir, "wal-dir", "./wal", "write-ahead log directory (one per processor instance)")
	fs.StringVar(&f.walSync, "wal-sync", "always", "WAL fsync policy: always (fsync every batch) or none (leave it to the OS)")
	fs.DurationVar(&f.walMaxAge, "wal-max-age", 24*time.Hour, "keep committed WAL batches this long")
	fs.Int64Var(&f.walMaxBytes, "wal-max-bytes", 1<<30, "keep at most this many WAL bytes of committed batches")
	fs.Int64Var(&f.walSegmentBytes, "wal-segment-bytes", wal.DefaultSegmentBytes, "start a new WAL segment above this size; retention prunes whole segments, so this is also the step of the WAL's size")
	f.routes.register(fs)
	fs.DurationVar(&f.roomTTL, "room-ttl", 24*time.Hour, "idle rooms expire from Redis after this long")
	fs.IntVar(&f.maxPollRecords, "max-poll-records", 50000, "records per batch at most (large batches catch up on a backlog cheaply; a processor that keeps up polls small ones)")
	fs.BoolVar(&f.createTopics, "create-topics", false, "create missing topics at start instead of failing")
	fs.StringVar(&f.ranking, "ranking", codec.DefaultRules().String(), "ranking rules: the fields to rank members on, most significant first, from spotlight, screen_share, audio, volume, video, role (the newest event time always comes last; a field left out is not ranked on)")
	fs.StringVar(&f.unknownTypes, "unknown-types", processor.UnknownTypesSkip, "what to do with a well-formed callback of a type rostrum does not rank on: skip (count it in rostrum_events_ignored_total) or dlq")
	fs.StringVar(&f.scoreEpoch, "score-epoch", codec.DefaultEpoch.Format(time.RFC3339), "epoch of the score's time field (RFC 3339); scores hold 2^38 ms ≈ 8.7 years after it")
	fs.DurationVar(&f.maxFutureSkew, "max-future-skew", 5*time.Minute, "reject events whose ts is further than this in the future")
	fs.IntVar(&f.maxRecordBytes, "max-record-bytes", 1<<20, "reject records larger than this")
	fs.IntVar(&f.maxEvents, "max-events", 10000, "reject array records with more events than this")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or console")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.http, "http", "127.0.0.1:8080", "address of the HTTP server: live page, /metrics, /healthz, /readyz, /v1/rooms/{room}/top (empty: off)")
	f.httpTLS.register(fs, "http", "the --http listener (the page, the read, control and administration API)")
	fs.DurationVar(&f.lagEvery, "lag-interval", 5*time.Second, "how often consumer lag is measured for /metrics")
	fs.StringVar(&f.stability, "stability", processor.StabilityHysteresis, "stable top list strategy: hysteresis (members change only when it lasts) or merge (the reference merge: sticky positions, membership follows the raw top-N); see docs/STABILITY.md")
	fs.DurationVar(&f.dwell, "stability-dwell", stability.DefaultDwell, "hysteresis: how long a member must hold its place in the raw top-N before it replaces a shown one (0: at once)")
	fs.DurationVar(&f.grace, "stability-grace", stability.DefaultGrace, "hysteresis: how long a shown member out of the raw top-N stays (0: it goes at once)")
	fs.IntVar(&f.margin, "stability-margin", stability.DefaultMargin, "hysteresis: a member leading the weakest shown one out of the raw top-N by this many volume steps replaces it at once (0: off)")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "on SIGTERM, finish or abandon the batch in flight, commit what is done and leave the group within this time")
	fs.DurationVar(&f.dueInterval, "stability-due-interval", 100*time.Millisecond, "hysteresis: how often to look for rooms whose dwell or grace ended without new events")
	fs.StringVar(&f.config, "config", "", "YAML config file; keys are these flag names")
	f.sec.Register(fs)
	f.limits.register(fs)
	f.control.register(fs)
	f.ops.register(fs)
	f.boardAdmin.register(fs)
	f.apiGuard.register(fs)
	f.streams.register(fs)
}

// parseFlags parses args, then fills unset flags from the environment and
// the config file, and checks the security settings (reading their files).
func parseFlags(fs *flag.FlagSet, f *runFlags, args []string) error {
	cfg, warnings, err := parseSources(fs, args, &f.config)
	if err != nil {
		return err
	}
	if f.boards, err = readBoards(cfg); err != nil {
		return err
	}
	f.boardsSource = "--config " + cfg
	if f.hints, err = readHints(cfg); err != nil {
		return err
	}
	if err := f.routes.read(cfg); err != nil {
		return err
	}
	if err := f.sec.Resolve(); err != nil {
		return err
	}
	f.warnings = append(warnings, f.sec.Warnings...)
	return nil
}

// logger is the logger of --log-format and --log-level, with the start-up
// warnings logged.
func (f *runFlags) logger(stderr io.Writer) (*zap.Logger, error) {
	return cli.NewLogger(stderr, f.logFormat, f.logLevel, f.warnings)
}

// pipelineConfig validates the flags that the processor, sink and WAL take.
func (f *runFlags) pipelineConfig(lg *zap.Logger) (processor.Config, sink.Config, wal.Config, error) {
	pc, so, wo, err := f.buildPipelineConfig(lg)
	if err != nil {
		return processor.Config{}, sink.Config{}, wal.Config{}, err
	}
	return pc, so, wo, nil
}

// buildPipelineConfig is pipelineConfig; on an error its results are
// partial and the caller drops them.
func (f *runFlags) buildPipelineConfig(lg *zap.Logger) (pc processor.Config, so sink.Config, wo wal.Config, err error) {
	meeting, err := f.meeting()
	if err != nil {
		return pc, so, wo, err
	}
	if wo, err = f.walOptions(lg); err != nil {
		return pc, so, wo, err
	}
	if err = f.checkRun(); err != nil {
		return pc, so, wo, err
	}
	rooms, err := runRooms(&f.routes, f.env)
	if err != nil {
		return pc, so, wo, err
	}
	pc = processor.Config{
		Brokers:         cli.SplitList(f.brokers),
		Env:             f.env,
		TopicPrefix:     f.topicPrefix,
		Group:           f.group,
		TopN:            f.topN,
		Rooms:           rooms,
		MaxPollRecords:  f.maxPollRecords,
		CreateTopics:    f.createTopics,
		Decode:          codec.DecodeConfig{MaxRecordBytes: f.maxRecordBytes, MaxEvents: f.maxEvents, MaxFutureSkew: f.maxFutureSkew},
		Meeting:         meeting,
		UnknownTypes:    f.unknownTypes,
		WALMaxAge:       f.walMaxAge,
		WALMaxBytes:     f.walMaxBytes,
		RebuildWindow:   f.roomTTL,
		Stability:       f.stability,
		Dwell:           f.dwell,
		Grace:           f.grace,
		Margin:          f.margin,
		DueInterval:     f.dueInterval,
		ShutdownTimeout: f.shutdownTimeout,
		MemberFile:      filepath.Join(f.walDir, "group-member"),
		Logger:          lg,
	}
	so = sink.Config{Env: f.env, TopN: f.topN, RoomTTL: f.roomTTL, Meeting: meeting, Logger: lg}
	f.limits.apply(&pc, &so, f.walDir)
	if err = f.ops.apply(&pc); err != nil {
		return pc, so, wo, err
	}
	if err = pc.Validate(); err != nil {
		return pc, so, wo, config.Rename(err, runFlagNames)
	}
	if err = so.Validate(); err != nil {
		return pc, so, wo, config.Rename(err, runFlagNames)
	}
	// Set after Validate: the board store needs the Redis client that
	// runProcessor opens.
	if pc.Boards, err = compileBoards(f.boards, f.boardsSource); err != nil {
		return pc, so, wo, err
	}
	if f.hintChain, err = compileHints(f.hints, pc.Boards, f.boardsSource); err != nil {
		return pc, so, wo, err
	}
	pc.MoreTopics = control.TopicsFor(f.topicPrefix, f.env).Configs()
	pc.KafkaOpts, err = f.sec.KafkaOpts()
	return pc, so, wo, err
}

// meeting is the score layout of --ranking and --score-epoch.
func (f *runFlags) meeting() (*codec.Meeting, error) {
	epoch, err := time.Parse(time.RFC3339, f.scoreEpoch)
	if err != nil {
		return nil, fmt.Errorf("--score-epoch: %v", err)
	}
	rules, err := codec.ParseRules(f.ranking)
	if err != nil {
		return nil, fmt.Errorf("--ranking: %v", err)
	}
	meeting, err := codec.NewMeetingRules(epoch, rules)
	if err != nil {
		return nil, fmt.Errorf("--ranking: %v", err)
	}
	return meeting, nil
}

// walOptions are the WAL's options of --wal-sync and --wal-segment-bytes.
func (f *runFlags) walOptions(lg *zap.Logger) (wal.Config, error) {
	o := wal.Config{SegmentBytes: f.walSegmentBytes, Logger: lg}
	var err error
	if o.Sync, err = wal.ParseSyncPolicy(f.walSync); err != nil {
		return o, fmt.Errorf("--wal-sync %v", err)
	}
	if f.walSegmentBytes < 1<<20 {
		return o, fmt.Errorf("--wal-segment-bytes must be at least 1048576 (1 MiB), got %d", f.walSegmentBytes)
	}
	return o, nil
}

// checkRun checks the flags that no Validate of the packages checks.
func (f *runFlags) checkRun() error {
	switch {
	case f.roomTTL < time.Minute:
		return fmt.Errorf("--room-ttl must be at least 1m, got %s", f.roomTTL)
	case f.maxFutureSkew < 0:
		return fmt.Errorf("--max-future-skew must not be negative")
	case f.maxRecordBytes < 64:
		return fmt.Errorf("--max-record-bytes must be at least 64, got %d", f.maxRecordBytes)
	case f.maxEvents < 1:
		return fmt.Errorf("--max-events must be at least 1, got %d", f.maxEvents)
	case f.walDir == "":
		return errors.New("--wal-dir is required")
	case f.redis == "" && !f.sec.Sentinel.On():
		return errors.New("--redis (or --redis-sentinel-master with --redis-sentinels) is required")
	}
	return nil
}

// runFlagNames translates the fields of processor.Config and sink.Config
// that `rostrum run` sets from flags into those flags' names, for the
// errors of their Validate methods.
var runFlagNames = map[string]string{
	// processor.Config
	"Brokers": "--brokers", "Env": "--env", "TopicPrefix": "--topic-prefix", "Group": "--group", "TopN": "--top-n",
	"InstanceID": "--instance-id", "SessionTimeout": "--kafka-session-timeout", "RebalanceTimeout": "--kafka-rebalance-timeout",
	"Rooms": "--route", "MaxPollRecords": "--max-poll-records", "CreateTopics": "--create-topics",
	"RequireCompactedOutput": "--allow-uncompacted-output", "Partitions": "--topic-partitions",
	"OutputPartitions": "--output-partitions", "ReplicationFactor": "--replication-factor", "DLQRetention": "--dlq-retention",
	"Meeting": "--ranking", "UnknownTypes": "--unknown-types", "Stability": "--stability", "Dwell": "--stability-dwell",
	"Grace": "--stability-grace", "Margin": "--stability-margin", "DueInterval": "--stability-due-interval",
	"WALMaxAge": "--wal-max-age", "WALMaxBytes": "--wal-max-bytes", "ShutdownTimeout": "--shutdown-timeout",
	"UnreadyFailures": "--unready-failures", "UnreadyAfter": "--unready-after", "AckDelay": "--ack-delay",
	"PipelineBatches": "--pipeline-batches", "MaxRoomsPerApply": "--max-rooms-per-apply", "RebuildWindow": "--room-ttl",
	"Boards": "--config (boards)",
	// sink.Config
	"RoomTTL": "--room-ttl", "MaxMembers": "--max-room-members", "CacheMembers": "--state-cache",
	"RoomsPerScript": "--rooms-per-script",
}

func cmdRun(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs)
	if err := parseFlags(fs, &f, args); err != nil {
		return err
	}
	lg, err := f.logger(stderr)
	if err != nil {
		return err
	}
	defer func() { _ = lg.Sync() }()
	defer exitIfStopHangs(ctx, f.shutdownTimeout+stopSlack, lg)()
	return cli.ScrubError(runProcessor(ctx, &f, lg, nil), f.sec.Secrets()...)
}

// stopSlack is how long past --shutdown-timeout a stop may take: the
// processor's leave and close take at most a second past it
// (processor.Run), the rest of the shutdown a few milliseconds; the
// contract is --shutdown-timeout + 2 s (docs/DESIGN.md §3.8).
const stopSlack = 1800 * time.Millisecond

// exitIfStopHangs is the last resort of the bounded stop: should the stop
// that ctx's end begins still run after limit, it logs so and exits the
// process with status 1. Every part of the shutdown has a deadline of its
// own, so this only fires on a bug; the returned func disarms it.
func exitIfStopHangs(ctx context.Context, limit time.Duration, lg *zap.Logger) func() {
	var mu sync.Mutex
	var timer *time.Timer
	done := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		timer = time.AfterFunc(limit, func() {
			lg.Error("stop did not finish within --shutdown-timeout: exiting", zap.Duration("limit", limit))
			_ = lg.Sync()
			os.Exit(exitUsage)
		})
	})
	return func() {
		stop()
		mu.Lock()
		defer mu.Unlock()
		done = true
		if timer != nil {
			timer.Stop()
		}
	}
}

// runProcessor opens Redis, the WAL and Kafka, runs the processor (with the
// HTTP server and the lag watcher beside it) until ctx ends, and closes
// everything in reverse order. started, if not nil, is called once the
// processor is consuming.
func runProcessor(ctx context.Context, f *runFlags, lg *zap.Logger, started func(*processor.Processor)) error {
	pc, so, wo, err := f.pipelineConfig(lg)
	if err != nil {
		return err
	}
	sec, err := f.loadSecrets() // before any connection: a bad file stops start-up at once
	if err != nil {
		return err
	}
	defer sec.creds.watch(ctx, lg)() // SIGHUP re-reads them all (reload.go); the process goes on
	setRedisLogger(lg)
	b := readBuild()
	lg.Info("starting", zap.String("version", b.Version), zap.String("revision", b.revision()),
		zap.String("go", b.GoVersion), zap.String("env", f.env))
	m := metrics.New(f.env)
	m.BuildInfo(b.Version, b.revision(), b.GoVersion)
	pc.Observer = m
	wo.OnSync = m.ObserveFsync
	// The processor's client also reports its metrics and logs through zap.
	pc.ConsumerOpts = []kgo.Opt{kgo.WithHooks(m.KafkaClientHooks()), kgo.WithLogger(newKafkaLogger(lg))}
	tr, err := osTracing(ctx, "rostrum", lg) // OTEL_* (docs/tracing.md)
	if err != nil {
		return err
	}
	defer tr.stop(lg)
	tr.processor(&pc)

	rc, store, err := f.openStore(ctx, so, pc, m)
	if err != nil {
		return err
	}
	defer rc.Close()
	var boards *board.Store
	if len(pc.Boards) > 0 {
		boards = board.NewStore(rc, f.env, pc.Boards)
		pc.BoardStore = boards
	}
	log, err := wal.Open(f.walDir, wo)
	if err != nil {
		return fmt.Errorf("--wal-dir %s: %w", f.walDir, err)
	}
	defer log.Close()
	p, err := processor.New(ctx, pc, store, log)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: a clean stop
		}
		return f.sec.KafkaError(err)
	}

	// The HTTP server and the lag watcher run beside the processor. They
	// stop with the signal, in parallel with the processor's drain, so that
	// the whole stop stays within about --shutdown-timeout; a side service
	// that fails stops the processor (runCtx).
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	side := newSideGroup(ctx, cancelRun)
	defer side.close()
	if err := f.startSide(side, runSide{pc: &pc, p: p, m: m, rc: rc, store: store, boards: boards, sec: sec, lg: lg}); err != nil {
		return err
	}
	if started != nil {
		started(p)
	}
	err = p.Run(runCtx)
	if werr := side.wait(); werr != nil && err == nil {
		err = werr
	}
	s := p.Stats()
	lg.Info("stopped", zap.Int64("batches", s.Batches.Load()), zap.Int64("records", s.Records.Load()),
		zap.Int64("events", s.Events.Load()), zap.Int64("dlq", s.DLQ.Load()), zap.Int64("published", s.Published.Load()))
	return err
}

// runSecrets are the credential files `rostrum run` reads at start-up,
// and the set SIGHUP reloads.
type runSecrets struct {
	guard         web.Config // the read tokens, CORS, rate and stream limits of --http
	adminTokens   *auth.Tokens
	controlTokens *auth.Tokens
	cert          *httpserve.Cert
	creds         credentials
}

// loadSecrets reads every credential file of run's flags.
func (f *runFlags) loadSecrets() (*runSecrets, error) {
	sec := &runSecrets{}
	if err := f.apiGuard.apply(&sec.guard); err != nil {
		return nil, err
	}
	if err := f.streams.apply(&sec.guard); err != nil {
		return nil, err
	}
	var err error
	if sec.adminTokens, err = f.boardAdmin.tokens(); err != nil {
		return nil, err
	}
	if sec.controlTokens, err = f.control.tokens(); err != nil {
		return nil, err
	}
	if sec.cert, err = f.httpTLS.load(); err != nil {
		return nil, err
	}
	sec.creds.tokens("--read-token-file", sec.guard.ReadTokens)
	sec.creds.tokens("--admin-token-file", sec.adminTokens)
	sec.creds.tokens("--control-token-file", sec.controlTokens)
	sec.creds.cert("--http-tls-cert", sec.cert)
	return sec, nil
}

// openStore connects to Redis, checks that it answers and that the
// scripts load (an ACL that forbids them fails at start-up), and returns
// the client and the meeting sink, both watched by m. The caller closes
// the client.
func (f *runFlags) openStore(ctx context.Context, so sink.Config, pc processor.Config, m *metrics.Processor) (redis.UniversalClient, *sink.Store, error) {
	ro, err := f.sec.RedisOptions(f.redis)
	if err != nil {
		return nil, nil, err
	}
	rc := redis.NewUniversalClient(ro)
	m.WatchRedisPool(func() metrics.RedisPool {
		s := rc.PoolStats()
		return metrics.RedisPool{Hits: s.Hits, Misses: s.Misses, Timeouts: s.Timeouts, Stale: s.StaleConns, Total: s.TotalConns, Idle: s.IdleConns}
	})
	store, err := sink.New(rc, so)
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	m.WatchStateCache(func() metrics.StateCache {
		s := store.CacheStats()
		return metrics.StateCache{Members: s.Members, Merged: s.Merged, Fast: s.Fast - s.Merged, Full: s.Full, Stale: s.Stale}
	})
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = store.Ping(pingCtx)
	cancel()
	if err != nil {
		rc.Close()
		return nil, nil, f.sec.RedisError(f.redis, err)
	}
	loadCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = loadScripts(loadCtx, rc, store, pc) // check.go
	cancel()
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return rc, store, nil
}

// sideGroup runs the services beside the processor: they stop when ctx
// ends or wait is called, and one that fails stops the processor (stop).
type sideGroup struct {
	g      *errgroup.Group
	ctx    context.Context
	cancel context.CancelFunc
	stop   context.CancelFunc // the processor's
	closed []func()           // run by close, in reverse order
}

func newSideGroup(ctx context.Context, stopProcessor context.CancelFunc) *sideGroup {
	ctx, cancel := context.WithCancel(ctx)
	g, ctx := errgroup.WithContext(ctx)
	return &sideGroup{g: g, ctx: ctx, cancel: cancel, stop: stopProcessor}
}

// goCritical runs f beside the processor; its error stops the processor.
func (s *sideGroup) goCritical(f func(ctx context.Context) error) {
	s.g.Go(func() error {
		if err := f(s.ctx); err != nil {
			s.stop()
			return err
		}
		return nil
	})
}

// onClose adds a closer that close runs after the services stopped.
func (s *sideGroup) onClose(f func()) { s.closed = append(s.closed, f) }

// wait stops the services and returns the first error among them.
func (s *sideGroup) wait() error {
	s.cancel()
	return s.g.Wait()
}

// close stops the services, waits for them and runs the closers.
func (s *sideGroup) close() {
	_ = s.wait()
	for i := len(s.closed) - 1; i >= 0; i-- {
		s.closed[i]()
	}
}

// runSide is what the side services of `rostrum run` read.
type runSide struct {
	pc     *processor.Config
	p      *processor.Processor
	m      *metrics.Processor
	rc     redis.UniversalClient
	store  *sink.Store
	boards *board.Store
	sec    *runSecrets
	lg     *zap.Logger
}

// startSide starts the HTTP server (with the control service and the
// board admin routes), the admin listener and the lag watcher.
func (f *runFlags) startSide(side *sideGroup, r runSide) error {
	if f.http != "" {
		if err := f.startHTTP(side, r); err != nil {
			return err
		}
	}
	if f.ops.adminHTTP != "" {
		side.goCritical(func(ctx context.Context) error { return serveAdmin(ctx, f.ops.adminHTTP, r.lg) })
	}
	lagCl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(r.pc.Brokers...)}, r.pc.KafkaOpts...)...)
	if err != nil {
		return err
	}
	side.onClose(lagCl.Close)
	side.g.Go(func() error {
		r.m.WatchLag(side.ctx, lagCl, r.p.Group(), r.p.Topics().Inputs(), f.lagEvery, r.lg)
		return nil
	})
	return nil
}

// startHTTP starts --http: the page, the API, /metrics and the health
// checks, the board admin routes and the control service.
func (f *runFlags) startHTTP(side *sideGroup, r runSide) error {
	guard := &r.sec.guard
	opts := web.Config{
		Source:    r.store,
		Metrics:   r.m.Handler(),
		Ready:     r.p.Ready,
		Logger:    r.lg,
		Counters:  countersOf(r.p, r.m),
		Stability: r.pc.Stability,
		TopN:      r.pc.TopN,
		// The listener stops beside the processor's drain: it must not
		// outlast --shutdown-timeout (docs/DESIGN.md §3.8).
		ShutdownGrace: min(httpserve.DefaultGrace, f.shutdownTimeout),
	}
	opts.ReadTokens, opts.CORSOrigins, opts.RateLimit, opts.RateBurst = guard.ReadTokens, guard.CORSOrigins, guard.RateLimit, guard.RateBurst
	if r.sec.cert != nil {
		opts.TLS = r.sec.cert.TLSConfig()
	}
	opts.MaxStreams, opts.MaxStreamsPerClient, opts.MaxStreamRooms = guard.MaxStreams, guard.MaxStreamsPerClient, guard.MaxStreamRooms
	if r.boards != nil {
		opts.Boards, opts.Hints = r.boards, f.hintChain
	}
	if r.sec.adminTokens != nil {
		opts.AdminTokens = r.sec.adminTokens
		pr, err := newCallbackProducer(r.pc.Brokers, r.pc.KafkaOpts, r.p.Topics().Client, f.boardAdmin.produceTimeout)
		if err != nil {
			return err
		}
		side.onClose(pr.Close)
		opts.Producer = pr
	}
	ctl, closeCtl, err := f.control.service(r.rc, r.sec.controlTokens, r.pc.Brokers, r.pc.KafkaOpts, control.TopicsFor(f.topicPrefix, f.env), f.env, f.roomTTL, r.lg)
	if err != nil {
		return err
	}
	side.onClose(closeCtl)
	opts.Control = ctl.Handler()
	side.g.Go(func() error { return ctl.Run(side.ctx) })
	srv := web.New(opts)
	side.goCritical(func(ctx context.Context) error {
		if err := srv.ListenAndServe(ctx, f.http); err != nil {
			// an operator relies on /metrics and /readyz: stop rather than run blind
			return fmt.Errorf("--http %s: %w", f.http, err)
		}
		return nil
	})
	return nil
}

// countersOf feeds the live page's counter strip.
func countersOf(p *processor.Processor, m *metrics.Processor) func() web.Counters {
	return func() web.Counters {
		s := p.Stats()
		lr, ls := m.Lag()
		c := web.Counters{Records: s.Records.Load(), Events: s.Events.Load(), DLQ: s.DLQ.Load(), Ignored: s.Ignored.Load(),
			Published: s.Published.Load(), LagRecords: lr, LagSeconds: ls, DLQByReason: m.DLQByReason()}
		for _, pl := range m.PartitionLags() {
			c.Partitions = append(c.Partitions, web.PartitionLag{Topic: pl.Topic, Partition: pl.Partition, Records: pl.Records, Seconds: pl.Seconds})
		}
		return c
	}
}
