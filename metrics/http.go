package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The HTTP API's series (web.HTTPMetrics), named like the gateway's
// rostrum_gateway_requests_total and rostrum_gateway_request_duration_seconds.
const (
	nameHTTPRequests = "rostrum_http_requests_total"
	nameHTTPDuration = "rostrum_http_request_duration_seconds"
)

// httpSecondBuckets span a read Redis answers at once to one
// that waited on a slow Redis or client: the gateway's buckets.
var httpSecondBuckets = []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10}

// httpMetrics are the series of the HTTP API of `rostrum run`. Labels are
// bounded: route is a route pattern of the server (web.Routes) or "other",
// code an HTTP status code.
type httpMetrics struct {
	requests *prometheus.CounterVec   // rostrum_http_requests_total{route,code}
	duration *prometheus.HistogramVec // rostrum_http_request_duration_seconds{route}
}

func (p *Processor) registerHTTP(r prometheus.Registerer) {
	p.http.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: nameHTTPRequests,
		Help: "HTTP API requests answered, by route pattern (\"other\": no route) and status code; an event stream counts when it opens.",
	}, []string{"route", "code"})
	p.http.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    nameHTTPDuration,
		Help:    "Seconds from an HTTP API request's arrival to the end of its answer, by route pattern; event streams are not timed.",
		Buckets: httpSecondBuckets,
	}, []string{"route"})
	r.MustRegister(p.http.requests, p.http.duration)
}

// HTTPRequest counts one request of the HTTP API answered with code on route
// (a route pattern, never a raw path).
func (p *Processor) HTTPRequest(route string, code int) {
	p.http.requests.WithLabelValues(route, codeLabel(code)).Inc()
}

// HTTPDuration observes how long one request of route took to answer.
func (p *Processor) HTTPDuration(route string, took time.Duration) {
	p.http.duration.WithLabelValues(route).Observe(max(took, 0).Seconds())
}

// codeLabels are the label values of the common status codes, made once.
var codeLabels = func() map[int]string {
	out := map[int]string{}
	for _, c := range []int{200, 204, 304, 400, 401, 403, 404, 405, 429, 500, 503} {
		out[c] = strconv.Itoa(c)
	}
	return out
}()

func codeLabel(code int) string {
	if s, ok := codeLabels[code]; ok {
		return s
	}
	return strconv.Itoa(code)
}

// handler is what Handler returns: the exposition handler, which also takes
// the HTTP API's observations (web.HTTPMetrics), so that a web server given
// it for /metrics records its requests on the same registry.
type handler struct {
	http.Handler
	p *Processor
}

func (h handler) HTTPRequest(route string, code int)            { h.p.HTTPRequest(route, code) }
func (h handler) HTTPDuration(route string, took time.Duration) { h.p.HTTPDuration(route, took) }
