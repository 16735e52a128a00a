package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/control"
	"github.com/rostrumhq/rostrum/hints"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/config"
	"github.com/rostrumhq/rostrum/internal/httpserve"
	"github.com/rostrumhq/rostrum/metrics"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
	"github.com/rostrumhq/rostrum/web"
)

// runFlags are the settings of `rostrum run` (and of the pipeline inside
// `rostrum demo`): the store's (storeFlags, all that `wal replay` takes
// too), the consumer's, the batch's and the HTTP server's. Each is also
// ROSTRUM_<NAME> and a key of --config.
type runFlags struct {
	storeFlags
	kafkaFlags
	batch           batchFlags // limits.go
	http            string
	httpTLS         listenTLSFlags // --http-tls-cert, --http-tls-key (reload.go)
	lagEvery        time.Duration
	shutdownTimeout time.Duration
	control         controlFlags    // control.go
	ops             opsFlags        // ops.go
	boardAdmin      boardAdminFlags // boardadmin.go
	apiGuard        apiGuardFlags   // apiguard.go
	streams         streamFlags     // streams.go
	hintChain       *hints.Chain    // hints compiled by pipelineConfig; nil: none
}

func (f *runFlags) register(fs *cli.FlagSet) {
	f.storeFlags.register(fs)
	f.kafkaFlags.register(fs)
	f.sec.RegisterKafka(fs)
	f.batch.register(fs)
	fs.Group("http").StringVar(&f.http, "http", "127.0.0.1:8080", "address of the HTTP server: live page, /metrics, /healthz, /readyz, /v1/rooms/{room}/top (empty: off)")
	f.httpTLS.register(fs, "http", "the --http listener (the page, the read, control and administration API)")
	fs.Group("ops").Tuning().DurationVar(&f.lagEvery, "lag-interval", 5*time.Second, "how often consumer lag is measured for /metrics")
	fs.Group("ops").Tuning().Sets("ShutdownTimeout").DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "on SIGTERM, finish or abandon the batch in flight, commit what is done and leave the group within this time")
	f.control.register(fs)
	f.ops.register(fs)
	f.boardAdmin.register(fs)
	f.apiGuard.register(fs)
	f.streams.register(fs)
}

// parseFlags parses args into run's flags (commonFlags.parse).
func parseFlags(fs *cli.FlagSet, f *runFlags, args []string) error {
	return f.parse(fs, args, &f.routes, nil)
}

// pipelineConfig validates the flags that the processor, sink and WAL take.
func (f *runFlags) pipelineConfig(lg *zap.Logger) (processor.Config, sink.Config, wal.Config, error) {
	pc, so, wo, err := f.storeConfig(lg)
	if err != nil {
		return processor.Config{}, sink.Config{}, wal.Config{}, err
	}
	if err := f.runConfig(&pc); err != nil {
		return processor.Config{}, sink.Config{}, wal.Config{}, err
	}
	if err := f.validate(so); err != nil {
		return processor.Config{}, sink.Config{}, wal.Config{}, err
	}
	return pc, so, wo, nil
}

// runConfig adds to the store's configuration what the consumer and the
// batch take, validates it, and compiles the hints.
func (f *runFlags) runConfig(pc *processor.Config) error {
	f.kafkaFlags.apply(pc)
	f.batch.apply(pc)
	pc.ShutdownTimeout = f.shutdownTimeout
	if err := f.ops.apply(pc); err != nil {
		return err
	}
	boards := pc.Boards
	pc.Boards = nil // Validate wants their store, which runProcessor opens
	if err := pc.Validate(); err != nil {
		return config.Rename(err, f.fieldFlags)
	}
	pc.Boards = boards
	var err error
	if f.hintChain, err = compileHints(f.hints, pc.Boards, f.boardsSource); err != nil {
		return err
	}
	pc.TopicSetup.More = control.TopicsFor(f.topicPrefix, f.env).Configs()
	pc.KafkaOpts, err = f.sec.KafkaOpts()
	return err
}

// fileFieldNames names the processor.Config fields that come from the
// config file rather than from a flag, for the errors of Validate; the
// fields a flag sets are named where the flag is registered (Group.Sets).
var fileFieldNames = map[string]string{"Boards": "--config (boards)"}

func cmdRun(ctx context.Context, args []string, stderr io.Writer) error {
	fs := cli.NewFlagSet("run", flag.ContinueOnError)
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
		return metrics.StateCache{Members: s.Members, Merged: s.Merged, Fast: s.Fast - s.Merged, Loaded: s.Loaded, Stale: s.Stale}
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
		Stability: r.pc.Stable.Strategy,
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
