package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// publishSecondBuckets span an output published within milliseconds of its
// oldest event to one that waited out a backlog or a failing Redis.
var publishSecondBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// registerOps registers the metrics an operator alerts on beside the
// pipeline's own: the publish latency and the build identity.
func (p *Processor) registerOps(r prometheus.Registerer) {
	p.publishLatency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    namePublishLatency,
		Help:    "Seconds from the Kafka timestamp of a room's oldest record in a batch to the broker's acknowledgement of the room's output record.",
		Buckets: publishSecondBuckets,
	})
	p.buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: nameBuildInfo,
		Help: "Always 1; its labels name the running build: version, VCS revision and Go version.",
	}, []string{"version", "revision", "goversion"})
	r.MustRegister(p.publishLatency, p.buildInfo)
}

// PublishLatency observes, for one published output record, the time from
// the Kafka timestamp of the room's oldest record in the batch to the
// broker's acknowledgement of the output: what a subscriber of the output
// topic waits for a change. A negative duration (a producer clock ahead of
// ours) counts as 0.
func (p *Processor) PublishLatency(took time.Duration) {
	p.publishLatency.Observe(max(took, 0).Seconds())
}

// BuildInfo sets rostrum_build_info{version,revision,goversion} to 1. Call it
// once, at start.
func (p *Processor) BuildInfo(version, revision, goVersion string) {
	p.buildInfo.WithLabelValues(version, revision, goVersion).Set(1)
}

// KafkaClientHooks returns franz-go's client metrics (the kprom plugin:
// connections, bytes and errors per broker, produced and fetched batches and
// records per topic), named kgo_… and labelled with env like every other
// metric. Give the hook to one client only: a second client registering the
// same metrics panics.
func (p *Processor) KafkaClientHooks() kgo.Hook {
	return kprom.NewMetrics("kgo", kprom.Registerer(p.labeled),
		kprom.FetchAndProduceDetail(kprom.ByNode, kprom.ByTopic, kprom.Batches, kprom.Records,
			kprom.CompressedBytes, kprom.UncompressedBytes, kprom.ConsistentNaming))
}

// RedisPool is what the Redis client's connection pool reports
// (go-redis PoolStats): cumulative Hits, Misses, Timeouts and Stale, and the
// current Total and Idle connections.
type RedisPool struct {
	Hits, Misses, Timeouts, Stale uint32
	Total, Idle                   uint32
}

// WatchRedisPool exports the Redis connection pool's figures, read at each
// scrape. Call it once.
func (p *Processor) WatchRedisPool(read func() RedisPool) {
	p.labeled.MustRegister(&poolCollector{read: read})
}

var (
	descPoolConns = prometheus.NewDesc(namePoolConns,
		"Connections in the Redis client's pool (every node's pool, for a cluster).", nil, nil)
	descPoolIdle = prometheus.NewDesc(namePoolIdle,
		"Idle connections in the Redis client's pool.", nil, nil)
	descPoolHits = prometheus.NewDesc(namePoolHits,
		"Times the Redis client found a free connection in its pool.", nil, nil)
	descPoolMisses = prometheus.NewDesc(namePoolMisses,
		"Times the Redis client found no free connection in its pool and dialled one.", nil, nil)
	descPoolTimeouts = prometheus.NewDesc(namePoolTimeouts,
		"Times the Redis client waited for a pool connection longer than its pool timeout.", nil, nil)
	descPoolStale = prometheus.NewDesc(namePoolStale,
		"Stale connections the Redis client removed from its pool.", nil, nil)
)

type poolCollector struct {
	mu   sync.Mutex
	read func() RedisPool
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPoolConns, descPoolIdle, descPoolHits, descPoolMisses, descPoolTimeouts, descPoolStale} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	s := c.read()
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descPoolConns, prometheus.GaugeValue, float64(s.Total))
	ch <- prometheus.MustNewConstMetric(descPoolIdle, prometheus.GaugeValue, float64(s.Idle))
	ch <- prometheus.MustNewConstMetric(descPoolHits, prometheus.CounterValue, float64(s.Hits))
	ch <- prometheus.MustNewConstMetric(descPoolMisses, prometheus.CounterValue, float64(s.Misses))
	ch <- prometheus.MustNewConstMetric(descPoolTimeouts, prometheus.CounterValue, float64(s.Timeouts))
	ch <- prometheus.MustNewConstMetric(descPoolStale, prometheus.CounterValue, float64(s.Stale))
}
