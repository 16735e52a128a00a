package gateway

import (
	"net/http"
	"strconv"

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

// codes are the status codes the handler answers with, as label values.
var codes = func() map[int]string {
	out := map[int]string{}
	for _, c := range []int{200, 202, 400, 401, 404, 405, 408, 413, 415, 422, 500, 503} {
		out[c] = strconv.Itoa(c)
	}
	return out
}()

func codeLabel(code int) string {
	if s, ok := codes[code]; ok {
		return s
	}
	return strconv.Itoa(code)
}

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
