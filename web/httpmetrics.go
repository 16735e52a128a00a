package web

import (
	"net/http"
	"strings"
	"time"
)

// HTTPMetrics records the requests of the server's routes. The handler of
// metrics.Processor (metrics.New(env).Handler()) implements it, so that the
// series live on the registry /metrics serves; web does not import
// Prometheus. Both methods are called concurrently.
type HTTPMetrics interface {
	// HTTPRequest counts one request answered with code on route.
	HTTPRequest(route string, code int)
	// HTTPDuration observes how long a request of route took, from its
	// arrival to the end of its answer. Event streams are not observed.
	HTTPDuration(route string, took time.Duration)
}

// RouteOther is the route label of a request that matched no route (404, or
// a method no route of its path allows).
const RouteOther = "other"

// streamRoute is the route whose answer is an event stream: counted when
// the stream opens (or is refused), never timed, as a stream lasts as long as
// its client and would swamp the histogram.
const streamRoute = "/v1/events"

// routeOf is the route label of a ServeMux pattern: the pattern's path
// ("GET /v1/rooms/{room}/top" → "/v1/rooms/{room}/top"), never the request's
// own path, so that room and member ids stay out of the labels; RouteOther
// for no pattern.
func routeOf(pattern string) string {
	if pattern == "" {
		return RouteOther
	}
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		pattern = strings.TrimLeft(pattern[i+1:], " \t")
	}
	return pattern
}

// observe wraps the server's handling of a request with m's observations.
// The route is the pattern the ServeMux matched, which it records in
// r.Pattern; a request the guard answered before routing (rate limit, read
// token) is looked up in the mux without being served. A CORS preflight
// matches no pattern (they name GET or POST): it counts as RouteOther.
func (s *Server) observe(m HTTPMetrics, w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request)) {
	start := time.Now()
	ow := &observedWriter{ResponseWriter: w, r: r, m: m}
	defer func() {
		if ow.counted {
			return // an event stream, counted when it opened
		}
		pattern := r.Pattern
		if pattern == "" {
			_, pattern = s.mux.Handler(r)
		}
		route := routeOf(pattern)
		code := ow.code
		if code == 0 {
			code = http.StatusOK // nothing written: net/http answers 200
		}
		m.HTTPRequest(route, code)
		if route != streamRoute {
			m.HTTPDuration(route, time.Since(start))
		}
	}()
	serve(ow, r)
}

// observedWriter notes the status code of an answer, and counts an event
// stream as soon as its header goes out.
type observedWriter struct {
	http.ResponseWriter
	r       *http.Request
	m       HTTPMetrics
	code    int  // the status written; 0: none yet
	counted bool // the request was counted (an event stream, at its header)
}

func (w *observedWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
		if route := routeOf(w.r.Pattern); route == streamRoute {
			w.counted = true
			w.m.HTTPRequest(route, code)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *observedWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// FlushError flushes through http.ResponseController, so that a flush before
// any write still counts as a 200 header.
func (w *observedWriter) FlushError() error {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (deadlines)
// through the writer.
func (w *observedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
