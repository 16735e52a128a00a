package metrics

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The metric names. A dashboard and the tests of other packages depend on
// them: renaming one is a breaking change.
const (
	nameRecordsConsumed   = "rostrum_records_consumed_total"
	nameEventsApplied     = "rostrum_events_applied_total"
	nameDLQRecords        = "rostrum_dlq_records_total"
	nameEventsIgnored     = "rostrum_events_ignored_total"
	nameBatchRecords      = "rostrum_batch_records"
	nameBatchDuration     = "rostrum_batch_duration_seconds"
	nameRedisRoundTrip    = "rostrum_redis_roundtrip_seconds"
	nameWALAppend         = "rostrum_wal_append_seconds"
	nameWALFsync          = "rostrum_wal_fsync_seconds"
	nameOutputsPublished  = "rostrum_outputs_published_total"
	nameStableConflicts   = "rostrum_stable_conflicts_total"
	nameBatchRetries      = "rostrum_batch_retries_total"
	nameRebalances        = "rostrum_rebalances_total"
	nameAssigned          = "rostrum_assigned_partitions"
	nameRedisResets       = "rostrum_redis_resets_total"
	nameFetchPaused       = "rostrum_fetch_paused"
	nameBoardEvents       = "rostrum_board_events_total"
	nameBoardSaturated    = "rostrum_board_saturated_total"
	nameBoardGapsClosed   = "rostrum_board_gaps_closed_total"
	nameCacheMembers      = "rostrum_state_cache_members"
	nameCacheApplies      = "rostrum_state_cache_applies_total"
	nameLagRecords        = "rostrum_consumer_lag_records"
	nameLagSeconds        = "rostrum_consumer_lag_seconds"
	nameGroupLagRecords   = "rostrum_consumer_group_lag_records"
	nameGroupLagSeconds   = "rostrum_consumer_group_lag_seconds"
	namePublishLatency    = "rostrum_publish_latency_seconds"
	nameBuildInfo         = "rostrum_build_info"
	namePoolConns         = "rostrum_redis_pool_connections"
	namePoolIdle          = "rostrum_redis_pool_idle_connections"
	namePoolHits          = "rostrum_redis_pool_hits_total"
	namePoolMisses        = "rostrum_redis_pool_misses_total"
	namePoolTimeouts      = "rostrum_redis_pool_timeouts_total"
	namePoolStale         = "rostrum_redis_pool_stale_connections_total"
	labelTopic, labelPart = "topic", "partition"
)

// Names returns the name of every rostrum_ metric a Processor exports, in the
// order of the package documentation. The Go runtime (go_) and process
// (process_) metrics are not included.
func Names() []string {
	return []string{
		nameRecordsConsumed, nameEventsApplied, nameDLQRecords, nameEventsIgnored,
		nameBatchRecords, nameBatchDuration, nameRedisRoundTrip,
		nameWALAppend, nameWALFsync,
		nameOutputsPublished, nameStableConflicts, nameBatchRetries,
		nameRebalances, nameAssigned, nameRedisResets, nameFetchPaused,
		nameBoardEvents, nameBoardSaturated, nameBoardGapsClosed,
		nameCacheMembers, nameCacheApplies,
		nameLagRecords, nameLagSeconds, nameGroupLagRecords, nameGroupLagSeconds,
		namePublishLatency, nameBuildInfo, nameHTTPRequests, nameHTTPDuration,
		namePoolConns, namePoolIdle, namePoolHits, namePoolMisses, namePoolTimeouts, namePoolStale,
	}
}

// Histogram buckets, in the metric's unit.
var (
	// batchRecordBuckets spans one record to the largest batch
	// (--max-poll-records defaults to 50000).
	batchRecordBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000}
	// batchSecondBuckets spans a fast batch (WAL, Redis, publish and commit
	// in a few milliseconds) to one that retried with backoff.
	batchSecondBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// redisSecondBuckets spans a local round trip to a stalled one.
	redisSecondBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
	// diskSecondBuckets spans a write to the page cache to a stalled fsync.
	diskSecondBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
)

// Processor holds rostrum's Prometheus metrics in a registry of its own. It
// implements the processor's Observer interface; WatchLag keeps its consumer
// lag gauges up to date. All methods are safe for concurrent use.
type Processor struct {
	reg     *prometheus.Registry
	labeled prometheus.Registerer // reg with the env label
	handler http.Handler

	consumed, applied, dlq *prometheus.CounterVec
	dlqMu                  sync.Mutex
	dlqByReason            map[string]int64 // the dlq counter's values summed over topics (DLQByReason)
	ignored                *prometheus.CounterVec
	ignoredMu              sync.Mutex
	ignoredTypes           map[string]bool // type labels in use, at most MaxIgnoredTypes
	batchRecords           prometheus.Histogram
	batchDuration          prometheus.Histogram
	redisRoundTrip         *prometheus.HistogramVec
	walAppend, walFsync    prometheus.Histogram
	published, conflicts   prometheus.Counter
	retries, redisResets   prometheus.Counter
	fetchPaused            prometheus.Gauge
	boardEvents            *prometheus.CounterVec
	boardSaturated         prometheus.Counter
	boardGapsClosed        prometheus.Counter
	rebalances             *prometheus.CounterVec
	assigned               prometheus.Gauge

	publishLatency prometheus.Histogram // ops.go
	http           httpMetrics          // http.go
	buildInfo      *prometheus.GaugeVec

	lagRecords, lagSeconds           *prometheus.GaugeVec
	groupLagRecords, groupLagSeconds prometheus.Gauge

	lagMu sync.Mutex
	// lagParts is the last measured lag of each partition that has gauge
	// children; a partition missing from a new measurement loses them.
	lagParts map[topicPartition]partitionLag
	// lagTotal and lagMax are the group's last measured lag: the sum of
	// lagParts' records and the largest of their ages.
	lagTotal int64
	lagMax   float64
}

type topicPartition struct {
	topic     string
	partition int32
}

func (tp topicPartition) labels() []string {
	return []string{tp.topic, strconv.Itoa(int(tp.partition))}
}

// New returns a Processor whose registry holds the rostrum_ metrics, each with
// the constant label env (omitted when env is empty), plus the Go runtime and
// process collectors. The label children whose values are known in advance
// (op, kind) are created at zero.
func New(env string) *Processor {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	var r prometheus.Registerer = reg
	if env != "" {
		r = prometheus.WrapRegistererWith(prometheus.Labels{"env": env}, reg)
	}

	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		r.MustRegister(c)
		return c
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		r.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
		r.MustRegister(h)
		return h
	}
	gaugeVec := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		r.MustRegister(g)
		return g
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
		r.MustRegister(g)
		return g
	}

	p := &Processor{reg: reg, labeled: r, lagParts: make(map[topicPartition]partitionLag),
		dlqByReason: make(map[string]int64)}
	p.consumed = counterVec(nameRecordsConsumed,
		"Kafka records consumed from an input topic, including those sent to the DLQ.", labelTopic)
	p.applied = counterVec(nameEventsApplied,
		"Callback events decoded, accepted and applied to Redis, by input topic.", labelTopic)
	p.dlq = counterVec(nameDLQRecords,
		"Input records sent to the dead-letter topic, by input topic and the class of the rule broken.", labelTopic, "reason")
	p.ignored = counterVec(nameEventsIgnored,
		"Callback events skipped because rostrum does not know their type, by input topic and type (types beyond the first MaxIgnoredTypes count as other).", labelTopic, "type")
	p.ignoredTypes = map[string]bool{}
	p.batchRecords = histogram(nameBatchRecords,
		"Records per completed poll batch.", batchRecordBuckets)
	p.batchDuration = histogram(nameBatchDuration,
		"Seconds from the start of a batch to its commit, retries included.", batchSecondBuckets)
	p.redisRoundTrip = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    nameRedisRoundTrip,
		Help:    "Seconds per pipelined Redis round trip: op=apply (member state and ranking) or op=store (stable lists).",
		Buckets: redisSecondBuckets,
	}, []string{"op"})
	r.MustRegister(p.redisRoundTrip)
	p.walAppend = histogram(nameWALAppend,
		"Seconds per write-ahead log append of a batch, its fsync included.", diskSecondBuckets)
	p.walFsync = histogram(nameWALFsync,
		"Seconds per write-ahead log fsync.", diskSecondBuckets)
	p.published = counter(nameOutputsPublished,
		"Stable top-N records published to the output topic, republished pending ones included.")
	p.conflicts = counter(nameStableConflicts,
		"Rooms whose stable list compare-and-set lost to another writer and was merged again.")
	p.retries = counter(nameBatchRetries,
		"Failed batch attempts that were retried.")
	p.rebalances = counterVec(nameRebalances,
		"Consumer group rebalance callbacks that moved at least one partition, by kind (assigned, revoked, lost).", "kind")
	p.assigned = gauge(nameAssigned,
		"Input partitions this instance owns.")
	p.redisResets = counter(nameRedisResets,
		"Times Redis was found to have lost its data and rostrum rebuilt the state.")
	p.fetchPaused = gauge(nameFetchPaused,
		"1 while input fetching is paused because a batch keeps failing (back-pressure), else 0.")
	p.boardEvents = counterVec(nameBoardEvents,
		"Leaderboard events by result: counted, or duplicate (an id a producer repeated).", "result")
	p.boardSaturated = counter(nameBoardSaturated,
		"Leaderboard score updates whose total exceeded the board's max-total (the total is kept, the score saturates).")
	p.boardGapsClosed = counter(nameBoardGapsClosed,
		"Gaps between a board's applied offset ranges closed to keep at most 64 per partition.")
	p.lagRecords = gaugeVec(nameLagRecords,
		"Records of a partition not yet committed by the consumer group: end offset minus committed offset.", labelTopic, labelPart)
	p.lagSeconds = gaugeVec(nameLagSeconds,
		"Age in seconds of the oldest record of a partition not yet committed by the consumer group; 0 when its lag is 0.", labelTopic, labelPart)
	p.groupLagRecords = gauge(nameGroupLagRecords,
		"Records not yet committed by the consumer group, summed over its input partitions.")
	p.groupLagSeconds = gauge(nameGroupLagSeconds,
		"Age in seconds of the oldest record not yet committed by the consumer group, over all its input partitions.")

	p.registerOps(r)
	p.registerHTTP(r)

	for _, op := range []string{"apply", "store", "boards"} {
		p.redisRoundTrip.WithLabelValues(op)
	}
	for _, kind := range []string{"assigned", "revoked", "lost"} {
		p.rebalances.WithLabelValues(kind)
	}
	for _, result := range []string{"counted", "duplicate"} {
		p.boardEvents.WithLabelValues(result)
	}

	p.handler = handler{promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}), p}
	return p
}

// Registry returns the registry holding the metrics, for a caller that adds
// its own collectors or serves them some other way.
func (p *Processor) Registry() *prometheus.Registry { return p.reg }

// Handler returns the HTTP handler serving the registry in the Prometheus
// exposition formats, for /metrics. It also implements web.HTTPMetrics: a
// web.Server given it as Options.Metrics records its API's requests
// (rostrum_http_…) through it.
func (p *Processor) Handler() http.Handler { return p.handler }
