package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/demo"
	"github.com/rostrumhq/rostrum/processor"
)

// The environments of a run: each mode has its own topics and keys.
const (
	envFlat    = "bench"         // rostrum flat out; its inputs also feed naive
	envRate    = "bench-rate"    // rostrum at a fixed rate
	envNaive   = "bench-naive"   // naive: output topic and ranking keys
	envCeiling = "bench-ceiling" // ceiling: ranking keys
)

// runner holds what the modes of one run share.
type runner struct {
	cfg     Config
	w       *Workload
	brokers []string
	redis   []string      // one node, or the seeds of a Redis Cluster
	kopts   []kgo.Opt     // TLS and SASL of an external cluster
	ropts   redis.Options // connection settings of an external Redis, without Addr
	// failover, when set, is how to reach a Sentinel-managed master
	// (Config.RedisFailover); redis is then empty.
	failover *redis.FailoverOptions
	prefix   string      // topic prefix, unique per run on a given cluster
	admin    *redisNodes // INFO, FLUSHALL, ZCARD: never the measured client
	rep      *Report

	rateProfiled    bool // the fixed-rate run's CPU profile was taken
	rateMemProfiled bool // and its allocation profiles
}

func (b *runner) problem(format string, args ...any) {
	b.rep.Problems = append(b.rep.Problems, fmt.Sprintf(format, args...))
}

func (b *runner) note(format string, args ...any) {
	b.rep.Notes = append(b.rep.Notes, fmt.Sprintf(format, args...))
}

func (b *runner) progress(format string, args ...any) {
	fmt.Fprintf(b.cfg.Progress, "bench: "+format+"\n", args...)
}

// kafka returns the options that reach the run's brokers, then opts.
func (b *runner) kafka(opts ...kgo.Opt) []kgo.Opt {
	return append(append([]kgo.Opt{kgo.SeedBrokers(b.brokers...)}, b.kopts...), opts...)
}

// newClient returns a new client of the run's Redis (a cluster client for
// a cluster); poolSize 0 is go-redis's default (per node).
func (b *runner) newClient(poolSize int) redis.UniversalClient {
	if b.failover != nil {
		o := *b.failover
		o.PoolSize = poolSize
		return redis.NewFailoverClient(&o)
	}
	if len(b.redis) > 1 {
		return redis.NewClusterClient(clusterOptions(b.redis, b.ropts, poolSize))
	}
	o := b.ropts
	o.Addr, o.PoolSize = b.redis[0], poolSize
	return redis.NewClient(&o)
}

// flush deletes every key of Redis, so that each mode starts from nothing.
func (b *runner) flush(ctx context.Context) error { return b.admin.flushAll(ctx) }

// Run generates the workload, starts an in-process Kafka broker and a
// private redis-server (unless cfg names others), runs the selected modes
// one after the other and returns their report. It fails on the first mode
// that cannot complete; irregularities that do not stop a mode (DLQ
// records, retries) are listed in Report.Problems.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if n := len(strconv.FormatInt(time.Now().UnixMilli(), 10)); n != tsDigits {
		return nil, fmt.Errorf("bench: the clock's Unix milliseconds have %d digits, not %d", n, tsDigits)
	}
	b := &runner{cfg: cfg, brokers: cfg.Brokers, redis: splitAddrs(cfg.Redis), rep: &Report{Problems: []string{}}}

	b.progress("generating %d events of workload %s", cfg.Events, cfg.Workload)
	w, err := Generate(cfg)
	if err != nil {
		return nil, err
	}
	b.w = w
	b.rep.Workload = w.summary()

	if len(b.brokers) == 0 {
		var k *demo.Broker
		withRole(ctx, roleBroker, func(context.Context) { k, err = demo.StartBroker(0) })
		if err != nil {
			return nil, err
		}
		defer k.Close()
		b.brokers = []string{k.Addr}
	} else {
		b.prefix = "rostrum-bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "."
		b.kopts = cfg.KafkaOpts
	}
	external := cfg.Redis != "" || cfg.RedisFailover != nil
	switch {
	case cfg.RedisFailover != nil:
		b.failover = cfg.RedisFailover
		b.admin = &redisNodes{nodes: []*redis.Client{b.newClient(0).(*redis.Client)}}
		b.admin.data = b.admin.nodes[0]
	case len(b.redis) == 0:
		r, err := demo.StartRedis()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		b.redis = []string{r.Addr}
	case cfg.RedisOptions != nil:
		b.ropts = *cfg.RedisOptions
	}
	if b.admin == nil {
		if b.admin, err = connectRedis(ctx, b.redis, b.ropts); err != nil {
			return nil, err
		}
	}
	defer b.admin.close()
	if external {
		what := "--redis " + cfg.Redis
		if cfg.RedisFailover != nil {
			what = "--redis-sentinel-master " + cfg.RedisFailover.MasterName
		}
		n, err := b.admin.dbSize(ctx)
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", what, err)
		}
		if n > 0 {
			return nil, fmt.Errorf("bench: %s holds %d keys; the benchmark deletes every key between modes, so give it an empty Redis of its own", what, n)
		}
		// Leave it empty, as found.
		defer func() { _ = b.flush(context.WithoutCancel(ctx)) }()
	}
	info, _, err := b.admin.info(ctx)
	if err != nil {
		return nil, err
	}
	b.rep.Machine = machine(info.version)
	b.rep.Machine.EmbeddedKafka = len(cfg.Brokers) == 0
	if b.admin.cluster != nil {
		b.rep.Machine.RedisMasters = b.admin.addrs()
	}

	var topics []string
	for _, env := range []string{envFlat, envRate, envNaive} {
		t := processor.TopicsFor(b.prefix, env)
		topics = append(topics, t.All()...)
	}
	if err := createTopics(ctx, b.kafka(), cfg.Partitions, topics...); err != nil {
		return nil, err
	}
	if cfg.has(ModeRostrum) || cfg.has(ModeNaive) {
		b.progress("preloading %d records", len(w.Records))
		start := time.Now()
		if err := preload(ctx, b.kafka(), w, processor.TopicsFor(b.prefix, envFlat)); err != nil {
			return nil, err
		}
		b.progress("preloaded in %.1f s", time.Since(start).Seconds())
	}

	rate := cfg.Rate
	if cfg.has(ModeRostrum) {
		b.progress("rostrum: flat out over %d events", len(w.Events))
		r, err := b.rostrum(ctx)
		if err != nil {
			return nil, err
		}
		b.done(r)
		if rate == 0 {
			rate = r.EventsPerSec / 2
		}
		fractions := cfg.Rates
		if len(fractions) == 0 {
			fractions = []float64{rate / r.EventsPerSec}
		}
		for _, f := range fractions {
			if cfg.RateDuration <= 0 {
				break
			}
			offered := f * r.EventsPerSec
			b.progress("rostrum: %.0f events/s (%.2f of flat out) offered for up to %s", offered, f, cfg.RateDuration)
			rr, err := b.rate(ctx, offered)
			if err != nil {
				return nil, err
			}
			rr.OfferedFraction = f
			b.done(rr)
		}
	}
	if cfg.has(ModeNaive) {
		b.progress("naive: for up to %s", cfg.NaiveDuration)
		r, err := b.naive(ctx)
		if err != nil {
			return nil, err
		}
		b.done(r)
	}
	if cfg.has(ModeCeiling) {
		b.progress("ceiling: %d pipelined ZADDs", len(w.Events))
		r, err := b.ceiling(ctx)
		if err != nil {
			return nil, err
		}
		b.done(r)
	}
	b.rep.ratios()
	return b.rep, nil
}

// splitAddrs splits a comma-separated address list, dropping empty items.
func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// done adds a mode's result to the report.
func (b *runner) done(r Result) {
	line := fmt.Sprintf("%s: %d events in %.2f s, %.0f events/s", r.Mode, r.Events, r.Seconds, r.EventsPerSec)
	if r.Latency != nil {
		line += fmt.Sprintf(", latency p50 %.0f ms p99 %.0f ms", r.Latency.P50, r.Latency.P99)
	}
	b.progress("%s", line)
	b.rep.Results = append(b.rep.Results, r)
}
