package main

import (
	"context"
	"encoding/json"
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

// cmdBench runs `rostrum bench`: the end-to-end benchmark (see package
// bench and docs/PERFORMANCE.md). The table or JSON goes to stdout,
// progress and logs to stderr.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if wantsFlicker(args) {
		return cmdFlicker(args, stdout, stderr)
	}
	if wantsGatewayBench(args) {
		return cmdBenchGateway(ctx, args, stdout, stderr)
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, w := range bench.Workloads() {
		names = append(names, fmt.Sprintf("%s (%d rooms × %d members)", w.Name, w.Rooms, w.Members))
	}
	names = append(names, "gateway (the callback gateway over HTTP; rostrum bench --workload gateway -h)")
	workload := fs.String("workload", "meeting", "workload: "+strings.Join(names, ", "))
	events := fs.Int("events", 1_000_000, "events in the workload (records hold one or several)")
	rooms := fs.Int("rooms", 0, "rooms (churn: rooms open at once); 0: the workload's default")
	members := fs.Int("members", 0, "members per room; 0: the workload's default")
	seed := fs.Uint64("seed", 1, "seed of the generated workload")
	modes := fs.String("modes", strings.Join(bench.AllModes(), ","), "modes to run, comma-separated: rostrum (flat out, then at --rate), naive, ceiling")
	rate := fs.Float64("rate", 0, "offered events/s of the fixed-rate latency run; 0: half the flat-out rate")
	rates := fs.String("rates", "", "a load curve instead of one fixed-rate run: fractions of the flat-out rate, comma-separated (e.g. 0.1,0.25,0.5,0.75,0.9)")
	chart := fs.String("chart", "", "with --rates: draw the curve (latency percentiles and CPU per event against the offered load) into this .svg file")
	rateSeconds := fs.Float64("rate-seconds", 10, "length of the fixed-rate latency run; 0: skip it")
	rateWarmup := fs.Float64("rate-warmup", 5, "seconds the fixed-rate run offers the rate before it measures (the processor's state cache fills); 0: measure from the start")
	naiveSeconds := fs.Float64("naive-seconds", 10, "time cap of the naive mode")
	brokers := fs.String("brokers", "", "Kafka seed brokers, comma-separated; empty: an in-process broker")
	redisAddr := fs.String("redis", "", "address of an empty Redis node the benchmark may FLUSHALL, or comma-separated seeds of an empty Redis Cluster (the report splits Redis's CPU across its masters); empty: a private redis-server")
	partitions := fs.Int("partitions", 3, "partitions of each topic the benchmark creates")
	topN := fs.Int("top-n", 7, "length of the stable top list, 1..100")
	maxPoll := fs.Int("max-poll-records", 50000, "records per batch at most")
	stateCache := fs.Int("state-cache", sink.DefaultCacheMembers, "member states kept in memory by the sink, as in rostrum run (0: off)")
	roomsPerScript := fs.Int("rooms-per-script", sink.DefaultRoomsPerScript, "cached rooms per Redis script call, as rostrum run --rooms-per-script (1: a call per room)")
	pipeline := fs.Bool("pipeline-batches", false, "run the processor with its batch pipeline on, as rostrum run --pipeline-batches (for A/B comparisons)")
	ackDelayFlag := fs.Duration("ack-delay", time.Second, "how long an output's acknowledgement waits to ride in the room's next apply, as rostrum run --ack-delay (0: with the next batch)")
	walSync := fs.String("wal-sync", "always", "WAL fsync policy: always or none")
	walDir := fs.String("wal-dir", "", "parent directory of the runs' WAL directories (removed afterwards); empty: the system's temporary directory")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the rostrum flat-out run to this file")
	rateMemProfile := fs.String("rate-memprofile", "", "write the allocation profiles at the end and (to FILE.base) at the start of the measured window of the (first) fixed-rate run: go tool pprof -base FILE.base bin/rostrum FILE")
	rateCPUProfile := fs.String("rate-cpuprofile", "", "write a CPU profile of the measured window of the (first) fixed-rate run to this file")
	memProfile := fs.String("memprofile", "", "write the allocation profile at the end of the rostrum flat-out run to this file")
	logLevel := fs.String("log-level", "warn", "processor log level: debug, info, warn, error")
	var sec cli.Security
	sec.Register(fs)
	fs.Bool("flicker", false, "run the flicker benchmark instead (rostrum bench --flicker -h for its flags)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := cli.ApplySecurityEnv(fs); err != nil {
		return err
	}
	if err := sec.Resolve(); err != nil {
		return err
	}
	// The in-process broker and the private redis-server take no
	// credentials: security settings are for the servers given by flag.
	switch {
	case *brokers == "" && sec.KafkaSet:
		return errors.New("--kafka-sasl and --kafka-tls* need --brokers: the in-process broker has neither")
	case *redisAddr == "" && !sec.Sentinel.On() && sec.RedisSet:
		return errors.New("--redis-user, --redis-password and --redis-tls* need --redis or --redis-sentinel-master: the private redis-server has none of them")
	}
	lf := runFlags{logFormat: "console", logLevel: *logLevel, warnings: sec.Warnings}
	lg, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	defer func() { _ = lg.Sync() }()

	cfg := bench.Config{
		Workload:        *workload,
		Seed:            *seed,
		Events:          *events,
		Rooms:           *rooms,
		Members:         *members,
		Modes:           cli.SplitList(*modes),
		Rate:            *rate,
		RateDuration:    seconds(*rateSeconds),
		RateWarmup:      seconds(*rateWarmup),
		NaiveDuration:   seconds(*naiveSeconds),
		Brokers:         cli.SplitList(*brokers),
		Redis:           *redisAddr,
		Partitions:      int32(*partitions),
		TopN:            *topN,
		MaxPollRecords:  *maxPoll,
		StateCache:      *stateCache,
		RoomsPerScript:  *roomsPerScript,
		PipelineBatches: *pipeline,
		AckDelay:        cli.AckDelay(*ackDelayFlag),
		WALDir:          *walDir,
		Logger:          lg,
		Progress:        stderr,
	}
	if cfg.RateWarmup == 0 {
		cfg.RateWarmup = -1 // 0 in Config is the default
	}
	switch {
	case *events < 1: // 0 would mean the default in Config
		return fmt.Errorf("--events must be at least 1, got %d", *events)
	case *stateCache < 0:
		return fmt.Errorf("--state-cache must be >= 0 (0: off), got %d", *stateCache)
	case *rateSeconds < 0:
		return fmt.Errorf("--rate-seconds must not be negative, got %v", *rateSeconds)
	case *rateWarmup < 0:
		return fmt.Errorf("--rate-warmup must not be negative, got %v", *rateWarmup)
	case *naiveSeconds <= 0:
		return fmt.Errorf("--naive-seconds must be positive, got %v", *naiveSeconds)
	case *rateSeconds == 0:
		cfg.RateDuration = -1 // no fixed-rate run
	}
	switch *walSync {
	case "always":
		cfg.WALSync = wal.SyncEveryAppend
	case "none":
		cfg.WALSync = wal.SyncNone
	default:
		return fmt.Errorf("--wal-sync must be always or none, got %q", *walSync)
	}
	for _, s := range cli.SplitList(*rates) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("--rates: %q is not a number", s)
		}
		cfg.Rates = append(cfg.Rates, f)
	}
	if *chart != "" && len(cfg.Rates) == 0 {
		return errors.New("--chart draws the curve of --rates: give --rates too")
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.KafkaOpts, err = sec.KafkaOpts(); err != nil {
		return err
	}
	switch {
	case sec.Sentinel.On():
		ro, err := sec.RedisOptions("")
		if err != nil {
			return err
		}
		cfg.RedisFailover = ro.Failover()
	case *redisAddr != "":
		if cfg.RedisOptions, err = sec.RedisSingle(*redisAddr); err != nil {
			return err
		}
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			_ = f.Close() // a no-op after the close below
		}
	}()
	for _, p := range []struct {
		path string
		dst  *io.Writer
	}{{*cpuProfile, &cfg.CPUProfile}, {*rateCPUProfile, &cfg.RateCPUProfile}, {*memProfile, &cfg.MemProfile},
		{*rateMemProfile, &cfg.RateMemProfile}, {base(*rateMemProfile), &cfg.RateMemProfileBase}} {
		if p.path == "" {
			continue
		}
		f, err := os.Create(p.path)
		if err != nil {
			return err
		}
		files = append(files, f)
		*p.dst = f
	}

	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		return cli.ScrubError(err, sec.Secrets()...)
	}
	if *chart != "" {
		if err := bench.WriteCurve(rep, *chart); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", f.Name(), err)
		}
	}
	lg.Info("bench done", zap.Int("problems", len(rep.Problems)))
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(stdout)
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
