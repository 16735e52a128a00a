package bench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/wal"
)

// The modes of a run. Mode rostrum also runs the fixed-rate latency run
// unless Config.RateDuration is negative.
const (
	ModeRostrum = "rostrum" // the real processor, flat out over preloaded records
	ModeNaive   = "naive"   // per event: ZADD, ZREVRANGE 0 6, synchronous produce
	ModeCeiling = "ceiling" // pipelined ZADDs of the same members, no processing
)

// AllModes lists every mode, in the order a run executes them.
func AllModes() []string { return []string{ModeRostrum, ModeNaive, ModeCeiling} }

// Config is one benchmark invocation. Zero values take the defaults noted.
type Config struct {
	// Workload names the generated load: "meeting", "town-hall" or "churn"
	// (see Workloads). Default: meeting.
	Workload string
	// Seed selects the generated records; the same Config gives the same
	// records (their ts fields are set when they are produced). Default: 1.
	Seed uint64
	// Events is how many events the workload holds (records hold one or
	// several). Default: 1,000,000.
	Events int
	// Rooms and Members scale the workload; 0 takes the workload's own
	// default (see Workloads).
	Rooms, Members int
	// Modes selects the modes to run (ModeRostrum, ModeNaive, ModeCeiling).
	// Default: all three.
	Modes []string

	// Rate is the offered load of the fixed-rate latency run (part of mode
	// rostrum, after the flat-out run), in events/s. Default: half the
	// flat-out rate just measured.
	Rate float64
	// Rates, when set, replaces the one fixed-rate run by a load curve: one
	// fixed-rate run per fraction of the flat-out rate just measured (each
	// in (0, 1]), in order. Rate is then unused.
	Rates []float64
	// RateDuration is how long the fixed-rate run offers load. It ends
	// earlier when the workload runs out of events. Default: 10s; negative:
	// no fixed-rate run.
	RateDuration time.Duration
	// RateWarmup is how long the fixed-rate run offers the rate before it
	// measures anything, so that it measures a processor in its steady
	// state (its state cache filled) rather than one just started. It takes
	// at most half the workload's records. Default: 5s; negative: none.
	RateWarmup time.Duration
	// NaiveDuration caps the naive mode. Default: 10s.
	NaiveDuration time.Duration

	// Brokers are the Kafka seed brokers to use; empty: an in-process kfake
	// broker on a free loopback port. Topics are created with a prefix
	// unique to the run, so an existing cluster's topics are left alone.
	Brokers []string
	// Redis is the address of a Redis node to use, or comma-separated
	// seed addresses of a Redis Cluster (several addresses mean a cluster,
	// as with `rostrum run --redis`); empty: a private redis-server. The
	// benchmark deletes every key of the node (of every master) between
	// modes and at the end (FLUSHALL), so it refuses one that holds keys at
	// start. Against a cluster, each Result splits Redis's CPU and commands
	// across the masters (Result.RedisNodes).
	Redis string
	// KafkaOpts are added to every Kafka client of a run against Brokers:
	// TLS and SASL for a cluster that needs them. Ignored with the
	// in-process broker.
	KafkaOpts []kgo.Opt
	// RedisOptions, when set, are the connection settings (ACL user,
	// password, TLS) of every client of Redis; Addr is taken from Redis.
	// Ignored with the private redis-server.
	RedisOptions *redis.Options
	// RedisFailover, when set, makes the run use the master that these
	// Sentinels name (go-redis's failover client, as `rostrum run
	// --redis-sentinel-master` connects), with its connection settings;
	// Redis and RedisOptions must then be empty. The master is emptied as
	// a Redis node is.
	RedisFailover *redis.FailoverOptions
	// Partitions of each topic the benchmark creates. Default: 3.
	Partitions int32

	// TopN, MaxPollRecords and WALSync are the processor's settings, as
	// `rostrum run` takes them. Defaults: 7, 10000, wal.SyncEveryAppend.
	TopN           int
	MaxPollRecords int
	WALSync        wal.SyncPolicy
	// StateCache bounds the sink's in-process member states
	// (sink.Config.CacheMembers): 0 none; `rostrum-dev bench`'s default is
	// sink.DefaultCacheMembers, as `rostrum run`'s.
	StateCache int
	// RoomsPerScript is sink.Config.RoomsPerScript (0: its default).
	RoomsPerScript int
	// PipelineBatches runs the processor with its batch pipeline on
	// (processor.Config.PipelineBatches), for A/B comparisons.
	PipelineBatches bool
	// PollTopUp is processor.Config.PollTopUp (rostrum run --poll-top-up).
	PollTopUp time.Duration
	// AckDelay is processor.Config.AckDelay (0: its default).
	AckDelay time.Duration
	// WALDir is the parent of the WAL directories the rostrum runs create
	// (and remove). Default: the system's temporary directory.
	WALDir string

	// CPUProfile, when set, receives a CPU profile (pprof format) of the
	// rostrum flat-out run: from the processor's start until it consumed
	// every record.
	CPUProfile io.Writer
	// RateCPUProfile, when set, receives a CPU profile (pprof format) of
	// the measured window of the fixed-rate run (of the first one, with
	// Rates), warm-up excluded.
	RateCPUProfile io.Writer
	// RateMemProfile and RateMemProfileBase, when set, receive the
	// allocation profile (pprof "allocs") at the end and at the start of
	// the measured window of the (first) fixed-rate run: the window's
	// allocations are their difference (go tool pprof -base).
	RateMemProfile, RateMemProfileBase io.Writer
	// MemProfile, when set, receives the allocation profile (pprof "allocs")
	// taken when the rostrum flat-out run ends. It counts every allocation
	// since the process started, so the workload generation shows too.
	MemProfile io.Writer

	// Logger receives the processor's logs. Default: zap.NewNop().
	Logger *zap.Logger
	// Progress receives one line per step (generating, preloading, each
	// mode). Default: none.
	Progress io.Writer
}

// withDefaults returns c with the zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Workload == "" {
		c.Workload = "meeting"
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Events == 0 {
		c.Events = 1_000_000
	}
	if len(c.Modes) == 0 {
		c.Modes = AllModes()
	}
	if c.RateWarmup == 0 {
		c.RateWarmup = 5 * time.Second
	}
	if c.RateDuration == 0 {
		c.RateDuration = 10 * time.Second
	}
	if c.NaiveDuration == 0 {
		c.NaiveDuration = 10 * time.Second
	}
	if c.Partitions == 0 {
		c.Partitions = 3
	}
	if c.TopN == 0 {
		c.TopN = 7
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = 10000
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// Validate reports the first setting out of range, naming its flag.
func (c Config) Validate() error {
	c = c.withDefaults()
	if _, ok := workloads[c.Workload]; !ok {
		return fmt.Errorf("--workload must be one of %s, got %q", strings.Join(WorkloadNames(), ", "), c.Workload)
	}
	switch {
	case c.Events < 1:
		return fmt.Errorf("--events must be at least 1, got %d", c.Events)
	case c.Rooms < 0:
		return fmt.Errorf("--rooms must be at least 1 (0: the workload's default), got %d", c.Rooms)
	case c.Members < 0:
		return fmt.Errorf("--members must be at least 1 (0: the workload's default), got %d", c.Members)
	case c.Rate < 0:
		return fmt.Errorf("--rate must not be negative, got %v", c.Rate)
	case slices.ContainsFunc(c.Rates, func(f float64) bool { return f <= 0 || f > 1 }):
		return fmt.Errorf("--rates must be fractions of the flat-out rate in (0, 1], got %v", c.Rates)
	case c.NaiveDuration < 0:
		return fmt.Errorf("--naive-seconds must be positive, got %v", c.NaiveDuration.Seconds())
	case c.Partitions < 1:
		return fmt.Errorf("--partitions must be at least 1, got %d", c.Partitions)
	case c.TopN < 1 || c.TopN > 100:
		return fmt.Errorf("--top-n must be between 1 and 100, got %d", c.TopN)
	case c.MaxPollRecords < 1:
		return fmt.Errorf("--max-poll-records must be at least 1, got %d", c.MaxPollRecords)
	case c.RedisFailover != nil && (c.Redis != "" || c.RedisOptions != nil):
		return errors.New("--redis and --redis-sentinel-master are exclusive")
	}
	for _, m := range c.Modes {
		if !slices.Contains(AllModes(), m) {
			return fmt.Errorf("--modes: unknown mode %q (modes: %s)", m, strings.Join(AllModes(), ","))
		}
	}
	return nil
}

func (c Config) has(mode string) bool { return slices.Contains(c.Modes, mode) }
