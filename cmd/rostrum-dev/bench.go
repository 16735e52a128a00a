package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/bench"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// benchFlags are the settings of `rostrum-dev bench` (the end-to-end
// benchmark; the gateway and flicker benchmarks have flags of their own).
type benchFlags struct {
	workload                       string
	events, rooms, members         int
	seed                           uint64
	modes, rates, chart            string
	rate                           float64 // events/s; 0: half the flat-out rate
	rateSeconds, rateWarmup        float64 // seconds
	naiveSeconds                   float64 // seconds
	brokers, redis                 string
	partitions, topN, maxPoll      int
	stateCache, roomsPerScript     int
	pipeline                       bool
	pollTopUp                      time.Duration
	ackDelay                       time.Duration
	walSync, walDir                string
	asJSON                         bool
	cpuProfile, memProfile         string
	rateCPUProfile, rateMemProfile string
	logLevel                       string
	sec                            cli.Security
}

func (f *benchFlags) register(fs *cli.FlagSet) {
	var names []string
	for _, w := range bench.Workloads() {
		names = append(names, fmt.Sprintf("%s (%d rooms × %d members)", w.Name, w.Rooms, w.Members))
	}
	names = append(names, "gateway (the callback gateway over HTTP; rostrum-dev bench --workload gateway -h)")
	fs.StringVar(&f.workload, "workload", "meeting", "workload: "+strings.Join(names, ", "))
	fs.IntVar(&f.events, "events", 1_000_000, "events in the workload (records hold one or several)")
	fs.IntVar(&f.rooms, "rooms", 0, "rooms (churn: rooms open at once); 0: the workload's default")
	fs.IntVar(&f.members, "members", 0, "members per room; 0: the workload's default")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the generated workload")
	fs.StringVar(&f.modes, "modes", strings.Join(bench.AllModes(), ","), "modes to run, comma-separated: rostrum (flat out, then at --rate), naive, ceiling")
	fs.Float64Var(&f.rate, "rate", 0, "offered events/s of the fixed-rate latency run; 0: half the flat-out rate")
	fs.StringVar(&f.rates, "rates", "", "a load curve instead of one fixed-rate run: fractions of the flat-out rate, comma-separated (e.g. 0.1,0.25,0.5,0.75,0.9)")
	fs.StringVar(&f.chart, "chart", "", "with --rates: draw the curve (latency percentiles and CPU per event against the offered load) into this .svg file")
	fs.Float64Var(&f.rateSeconds, "rate-seconds", 10, "length of the fixed-rate latency run; 0: skip it")
	fs.Float64Var(&f.rateWarmup, "rate-warmup", 5, "seconds the fixed-rate run offers the rate before it measures (the processor's state cache fills); 0: measure from the start")
	fs.Float64Var(&f.naiveSeconds, "naive-seconds", 10, "time cap of the naive mode")
	fs.StringVar(&f.brokers, "brokers", "", "Kafka seed brokers, comma-separated; empty: an in-process broker")
	fs.StringVar(&f.redis, "redis", "", "address of an empty Redis node the benchmark may FLUSHALL, or comma-separated seeds of an empty Redis Cluster (the report splits Redis's CPU across its masters); empty: a private redis-server")
	fs.IntVar(&f.partitions, "partitions", 3, "partitions of each topic the benchmark creates")
	fs.IntVar(&f.topN, "top-n", 7, "length of the stable top list, 1..100")
	fs.IntVar(&f.maxPoll, "max-poll-records", 50000, "records per batch at most")
	fs.IntVar(&f.stateCache, "state-cache", sink.DefaultCacheMembers, "member states kept in memory by the sink, as in rostrum run (0: none kept, every room read before it is written)")
	fs.IntVar(&f.roomsPerScript, "rooms-per-script", sink.DefaultRoomsPerScript, "cached rooms per Redis script call, as rostrum run --rooms-per-script (1: a call per room)")
	fs.BoolVar(&f.pipeline, "pipeline-batches", false, "run the processor with its batch pipeline on, as rostrum run --pipeline-batches (for A/B comparisons)")
	fs.DurationVar(&f.pollTopUp, "poll-top-up", 0, "after a poll that returned records, wait up to this long for more, as rostrum run --poll-top-up (0: off)")
	fs.DurationVar(&f.ackDelay, "ack-delay", time.Second, "how long an output's acknowledgement waits to ride in the room's next apply, as rostrum run --ack-delay (0: with the next batch)")
	fs.StringVar(&f.walSync, "wal-sync", "always", "WAL fsync policy: always or none")
	fs.StringVar(&f.walDir, "wal-dir", "", "parent directory of the runs' WAL directories (removed afterwards); empty: the system's temporary directory")
	fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the rostrum flat-out run to this file")
	fs.StringVar(&f.rateMemProfile, "rate-memprofile", "", "write the allocation profiles at the end and (to FILE.base) at the start of the measured window of the (first) fixed-rate run: go tool pprof -base FILE.base bin/rostrum-dev FILE")
	fs.StringVar(&f.rateCPUProfile, "rate-cpuprofile", "", "write a CPU profile of the measured window of the (first) fixed-rate run to this file")
	fs.StringVar(&f.memProfile, "memprofile", "", "write the allocation profile at the end of the rostrum flat-out run to this file")
	fs.StringVar(&f.logLevel, "log-level", "warn", "processor log level: debug, info, warn, error")
	f.sec.Register(fs)
	fs.Bool("flicker", false, "run the flicker benchmark instead (rostrum-dev bench --flicker -h for its flags)")
}

// cmdBench runs `rostrum-dev bench`: the end-to-end benchmark (see package
// bench and docs/PERFORMANCE.md), or with --flicker or --workload gateway
// the benchmark of that name. The table or JSON goes to stdout, progress
// and logs to stderr.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if wantsFlicker(args) {
		return cmdFlicker(args, stdout, stderr)
	}
	if wantsGatewayBench(args) {
		return cmdBenchGateway(ctx, args, stdout, stderr)
	}
	var f benchFlags
	if err := f.parse(args, stderr); err != nil {
		return err
	}
	lg, err := cli.NewLogger(stderr, "console", f.logLevel, f.sec.Warnings)
	if err != nil {
		return err
	}
	defer func() { _ = lg.Sync() }()
	cfg, err := f.config(lg, stderr)
	if err != nil {
		return err
	}
	profiles, err := f.openProfiles(&cfg)
	defer profiles.close() // a no-op after the close below
	if err != nil {
		return err
	}

	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return cli.ScrubError(err, f.sec.Secrets()...)
	}
	if f.chart != "" {
		if err := bench.WriteCurve(rep, f.chart); err != nil {
			return err
		}
	}
	if err := profiles.close(); err != nil {
		return err
	}
	lg.Info("bench done", zap.Int("problems", len(rep.Problems)))
	return writeReport(stdout, f.asJSON, rep)
}

// parse parses args, takes the unset security flags from the environment
// and resolves them.
func (f *benchFlags) parse(args []string, stderr io.Writer) error {
	fs := cli.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := cli.ApplySecurityEnv(fs); err != nil {
		return err
	}
	if err := f.sec.Resolve(); err != nil {
		return err
	}
	// The in-process broker and the private redis-server take no
	// credentials: security settings are for the servers given by flag.
	switch {
	case f.brokers == "" && f.sec.KafkaSet:
		return errors.New("--kafka-sasl and --kafka-tls* need --brokers: the in-process broker has neither")
	case f.redis == "" && !f.sec.Sentinel.On() && f.sec.RedisSet:
		return errors.New("--redis-user, --redis-password and --redis-tls* need --redis or --redis-sentinel-master: the private redis-server has none of them")
	}
	return nil
}

// config validates the flags and returns the benchmark's configuration,
// clients' options included. Errors name the flag.
func (f *benchFlags) config(lg *zap.Logger, progress io.Writer) (bench.Config, error) {
	cfg := bench.Config{
		Workload: f.workload, Seed: f.seed, Events: f.events, Rooms: f.rooms, Members: f.members,
		Modes: cli.SplitList(f.modes), Rate: f.rate,
		RateDuration: seconds(f.rateSeconds), RateWarmup: seconds(f.rateWarmup), NaiveDuration: seconds(f.naiveSeconds),
		Brokers: cli.SplitList(f.brokers), Redis: f.redis, Partitions: int32(f.partitions),
		TopN: f.topN, MaxPollRecords: f.maxPoll, StateCache: f.stateCache, RoomsPerScript: f.roomsPerScript,
		PipelineBatches: f.pipeline, PollTopUp: f.pollTopUp, AckDelay: cli.AckDelay(f.ackDelay), WALDir: f.walDir,
		Logger: lg, Progress: progress,
	}
	if cfg.RateWarmup == 0 {
		cfg.RateWarmup = -1 // 0 in Config is the default
	}
	switch {
	case f.events < 1: // 0 would mean the default in Config
		return cfg, fmt.Errorf("--events must be at least 1, got %d", f.events)
	case f.stateCache < 0:
		return cfg, fmt.Errorf("--state-cache must be >= 0 (0: none kept), got %d", f.stateCache)
	case f.rateSeconds < 0:
		return cfg, fmt.Errorf("--rate-seconds must not be negative, got %v", f.rateSeconds)
	case f.rateWarmup < 0:
		return cfg, fmt.Errorf("--rate-warmup must not be negative, got %v", f.rateWarmup)
	case f.naiveSeconds <= 0:
		return cfg, fmt.Errorf("--naive-seconds must be positive, got %v", f.naiveSeconds)
	case f.rateSeconds == 0:
		cfg.RateDuration = -1 // no fixed-rate run
	}
	var err error
	if cfg.WALSync, err = wal.ParseSyncPolicy(f.walSync); err != nil {
		return cfg, fmt.Errorf("--wal-sync %v", err)
	}
	for _, s := range cli.SplitList(f.rates) {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return cfg, fmt.Errorf("--rates: %q is not a number", s)
		}
		cfg.Rates = append(cfg.Rates, r)
	}
	if f.chart != "" && len(cfg.Rates) == 0 {
		return cfg, errors.New("--chart draws the curve of --rates: give --rates too")
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, f.clientOptions(&cfg)
}

// clientOptions puts the security settings into cfg's Kafka and Redis
// options: Redis through the Sentinels, or the node or cluster of --redis.
func (f *benchFlags) clientOptions(cfg *bench.Config) error {
	var err error
	if cfg.KafkaOpts, err = f.sec.KafkaOpts(); err != nil {
		return err
	}
	switch {
	case f.sec.Sentinel.On():
		ro, err := f.sec.RedisOptions("")
		if err != nil {
			return err
		}
		cfg.RedisFailover = ro.Failover()
	case f.redis != "":
		if cfg.RedisOptions, err = f.sec.RedisSingle(f.redis); err != nil {
			return err
		}
	}
	return nil
}

// profileFiles are the open files of the profiling flags.
type profileFiles []*os.File

// openProfiles creates the file of each profiling flag given and points
// cfg's writer at it. The files are returned even with an error, for the
// caller to close.
func (f *benchFlags) openProfiles(cfg *bench.Config) (profileFiles, error) {
	var files profileFiles
	for _, p := range []struct {
		path string
		dst  *io.Writer
	}{{f.cpuProfile, &cfg.CPUProfile}, {f.rateCPUProfile, &cfg.RateCPUProfile}, {f.memProfile, &cfg.MemProfile},
		{f.rateMemProfile, &cfg.RateMemProfile}, {base(f.rateMemProfile), &cfg.RateMemProfileBase}} {
		if p.path == "" {
			continue
		}
		fh, err := os.Create(p.path)
		if err != nil {
			return files, err
		}
		files = append(files, fh)
		*p.dst = fh
	}
	return files, nil
}

// close closes every file and returns the first error, naming the file.
// Closing again returns nil.
func (p *profileFiles) close() error {
	var first error
	for _, fh := range *p {
		if err := fh.Close(); err != nil && first == nil {
			first = fmt.Errorf("write %s: %w", fh.Name(), err)
		}
	}
	*p = nil
	return first
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// base names the start-of-window profile of --rate-memprofile FILE:
// FILE.base ("" without the flag).
func base(path string) string {
	if path == "" {
		return ""
	}
	return path + ".base"
}
