package gateway

import (
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the gateway's Prometheus series (docs/METRICS.md). Labels are
// bounded: source is rtc, client, signal or "other" (an unknown path), code
// an HTTP status, env a routed environment.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec   // rostrum_gateway_requests_total{source,code}
	latency  *prometheus.HistogramVec // rostrum_gateway_request_duration_seconds{source}
	records  *prometheus.CounterVec   // rostrum_gateway_records_produced_total{env,source}
	bytes    *prometheus.CounterVec   // rostrum_gateway_produced_bytes_total{env,source}
	objects  *prometheus.CounterVec   // rostrum_gateway_objects_accepted_total{source}
	inflight prometheus.Gauge         // rostrum_gateway_inflight_requests
	verify   prometheus.Gauge         // rostrum_gateway_verifying_requests
}

// NewMetrics registers the gateway's series, with the Go runtime and
// process collectors, on a registry of their own.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rostrum_gateway_requests_total",
			Help: "Callback requests answered, by source and HTTP status code.",
		}, []string{"source", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rostrum_gateway_request_duration_seconds",
			Help:    "Time from a callback request's arrival to its answer (for a 202: until every record was acknowledged).",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10},
		}, []string{"source"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rostrum_gateway_records_produced_total",
			Help: "Records acknowledged by the brokers, by environment and source.",
		}, []string{"env", "source"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rostrum_gateway_produced_bytes_total",
			Help: "Record value bytes acknowledged by the brokers, by environment and source.",
		}, []string{"env", "source"}),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rostrum_gateway_objects_accepted_total",
			Help: "Callback objects of accepted (202) requests, by source.",
		}, []string{"source"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rostrum_gateway_inflight_requests",
			Help: "Callback requests being handled now, their credentials checked (at most --max-inflight).",
		}),
		verify: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rostrum_gateway_verifying_requests",
			Help: "Signed callback requests reading their body to have the signature checked (at most --max-inflight).",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.records, m.bytes, m.objects, m.inflight, m.verify,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the series in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is where the series live, for tests and for callers that add
// their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// MetricNames lists the names of the gateway's own series, for the
// dashboard's check that every series it queries exists.
func MetricNames() []string {
	return []string{
		"rostrum_gateway_requests_total",
		"rostrum_gateway_request_duration_seconds",
		"rostrum_gateway_records_produced_total",
		"rostrum_gateway_produced_bytes_total",
		"rostrum_gateway_objects_accepted_total",
		"rostrum_gateway_inflight_requests",
		"rostrum_gateway_verifying_requests",
	}
}

// child is one child of a metric vector, for fixed label values, resolved
// on first use and then kept: WithLabelValues hashes the values and takes
// the vector's lock on every call, which a request need not pay for each
// of its series. Resolving on first use rather than up front keeps
// /metrics listing only the label values that occurred, as calling
// WithLabelValues each time does. Safe for concurrent use.
type child[T any] struct {
	resolve func() T
	v       atomic.Pointer[T]
}

func (c *child[T]) get() T {
	if v := c.v.Load(); v != nil {
		return *v
	}
	v := c.resolve()
	c.v.Store(&v)
	return v
}

// counterOf resolves the child of vec for lvs.
func counterOf(vec *prometheus.CounterVec, lvs ...string) func() prometheus.Counter {
	return func() prometheus.Counter { return vec.WithLabelValues(lvs...) }
}

// sourceOther is the index, after those of Sources, of the source label
// "other": a path that names no source.
var sourceOther = len(Sources)

// sourceIndex returns the index of source in Sources, or sourceOther.
func sourceIndex(source string) int {
	for i, s := range Sources {
		if s == source {
			return i
		}
	}
	return sourceOther
}

// sourceLabel is the source label of index src.
func sourceLabel(src int) string {
	if src < len(Sources) {
		return Sources[src]
	}
	return "other"
}

// codeList are the status codes the handler answers with.
var codeList = [...]int{200, 202, 400, 401, 404, 405, 408, 413, 415, 422, 500, 503}

// sourceSeries are the series of one source label.
type sourceSeries struct {
	source   string
	requests [len(codeList)]child[prometheus.Counter] // by code, as codeList
	latency  child[prometheus.Observer]
	objects  child[prometheus.Counter]
}

func (m *Metrics) sourceSeries(source string) *sourceSeries {
	s := &sourceSeries{source: source}
	s.latency.resolve = func() prometheus.Observer { return m.latency.WithLabelValues(source) }
	s.objects.resolve = counterOf(m.objects, source)
	for i, c := range codeList {
		s.requests[i].resolve = counterOf(m.requests, source, strconv.Itoa(c))
	}
	return s
}

// answered counts an answer of code and observes its latency.
func (s *sourceSeries) answered(m *Metrics, code int, d time.Duration) {
	var c prometheus.Counter
	if i := slices.Index(codeList[:], code); i >= 0 {
		c = s.requests[i].get()
	} else {
		c = m.requests.WithLabelValues(s.source, strconv.Itoa(code))
	}
	c.Inc()
	s.latency.get().Observe(d.Seconds())
}

// envSeries are the series of one environment and source.
type envSeries struct {
	records child[prometheus.Counter]
	bytes   child[prometheus.Counter]
}

func (m *Metrics) envSeries(env, source string) *envSeries {
	s := &envSeries{}
	s.records.resolve = counterOf(m.records, env, source)
	s.bytes.resolve = counterOf(m.bytes, env, source)
	return s
}
