package web

import (
	"context"
	"crypto/tls"
	"embed"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/docs"
	"github.com/rostrumhq/rostrum/hints"
	"github.com/rostrumhq/rostrum/internal/httpserve"
	"github.com/rostrumhq/rostrum/internal/problem"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
)

// Source is what the page reads. The Redis sink (sink.Store) implements it.
type Source interface {
	// Rooms lists up to max rooms, busiest first.
	Rooms(ctx context.Context, max int) ([]ranking.RoomSummary, error)
	// RoomView reads one room; it returns ranking.ErrUnknownRoom for a room
	// with no state.
	RoomView(ctx context.Context, room string) (ranking.RoomView, error)
}

// BatchSource is a Source that reads many rooms in one call (sink.Store:
// one pipelined round trip). The event streams' poll reads all its rooms
// through it when the Source is one; views[i] and errs[i] are rooms[i]'s,
// errs[i] ranking.ErrUnknownRoom for a room with no state.
type BatchSource interface {
	RoomViews(ctx context.Context, rooms []string) (views []ranking.RoomView, errs []error)
}

// Counters are the processor's running totals as the page shows them.
type Counters struct {
	Records    int64   // records consumed
	Events     int64   // events applied
	DLQ        int64   // records sent to the DLQ
	Ignored    int64   // events skipped for a type rostrum does not rank on
	Published  int64   // output records published
	LagRecords int64   // records behind the end of the input partitions
	LagSeconds float64 // age of the oldest unconsumed record, seconds
	// DLQByReason counts the records sent to the DLQ since start by reason
	// class; nil: none.
	DLQByReason map[string]int64
	Partitions  []PartitionLag // the lag of each input partition, as last measured
}

// PartitionLag is the consumer lag of one input partition.
type PartitionLag struct {
	Topic     string
	Partition int32
	Records   int64   // records behind the end
	Seconds   float64 // age of the oldest unconsumed record
}

// Config configure a Server.
type Config struct {
	Source Source // required
	Boards Boards // leaderboards (/v1/boards…); nil: none configured
	// Hints answers GET /v1/members/{id}/hints (with Boards); nil: none
	// configured, 404.
	Hints *hints.Chain
	// AdminTokens guard the board administration route (POST
	// /v1/boards/{name}/members/{member}/remove); nil: it answers 403.
	AdminTokens *auth.Tokens
	// Producer sends the remove events of that route to the client callback
	// topic; nil: it answers 503.
	Producer CallbackProducer
	// ReadTokens, when set, guard every read of the API (see guard.go).
	ReadTokens *auth.Tokens
	// CORSOrigins are the origins whose pages may call the API from a
	// browser ("*": any); none: no CORS headers.
	CORSOrigins []string
	// RateLimit is each client address's API requests per second, with
	// bursts of RateBurst (default 1); 0: no limit.
	RateLimit float64
	RateBurst int
	Counters  func() Counters                 // called once per interval while a stream is open; nil: the page shows no counters
	Metrics   http.Handler                    // mounted at /metrics when not nil
	Ready     func(ctx context.Context) error // /readyz; nil: always ready
	Logger    *zap.Logger                     // nil: no logs
	Interval  time.Duration                   // event streams' poll interval, one poll for all; default 500ms
	MaxRooms  int                             // rooms of the "rooms" event at most; default 200
	// Stability names the processor's stable strategy, as the page labels
	// the published list; default "hysteresis".
	Stability string
	TopN      int // length of the lists; default 7

	// Control serves the recording control and layout API (control.Service's
	// Handler), mounted at ControlRoutes when not nil.
	Control http.Handler

	// HTTPMetrics records every request by route (httpmetrics.go); nil:
	// Metrics, when it implements HTTPMetrics (metrics.Processor's handler
	// does), else none.
	HTTPMetrics HTTPMetrics

	// MaxStreams bounds the event streams open at once, all clients
	// together; one more answers 503 with Retry-After. default: 1000
	MaxStreams int
	// MaxStreamsPerClient bounds the event streams one client (an IPv4
	// address or an IPv6 /64) holds open at once; one more answers 429 with
	// Retry-After. default: 16
	MaxStreamsPerClient int
	// MaxStreamRooms bounds the distinct rooms the open streams show; a
	// stream for one more room answers 503 with Retry-After (a stream for a
	// room already shown is not refused for it). default: 200
	MaxStreamRooms int

	// TLS, when not nil, makes ListenAndServe and Serve serve HTTPS with it;
	// nil: plain HTTP.
	TLS *tls.Config
	// Limits bound what one client may hold of the listener (timeouts,
	// header size); zero fields take httpserve's defaults. Event streams
	// lift their own write deadline.
	Limits httpserve.Limits
	// ShutdownGrace is how long requests in flight may finish once the
	// serving context ends; open event streams end at once. default: 5s
	ShutdownGrace time.Duration
}

// Defaults of the stream limits.
const (
	DefaultMaxStreams          = 1000
	DefaultMaxStreamsPerClient = 16
	DefaultMaxStreamRooms      = 200
)

// Server is the HTTP handler of the page and its API. It is safe for
// concurrent use.
type Server struct {
	opt   Config
	mux   *http.ServeMux
	h     http.Handler // mux, its plain-text errors answered as problems
	hub   *hub
	guard *guard // CORS, rate limit, read tokens (guard.go)
	lg    *zap.Logger
	stop  chan struct{} // closed when Serve begins its shutdown
	once  sync.Once

	readyMu sync.Mutex
	unready string // the last /readyz failure's text; "": ready
}

// ControlRoutes are the path patterns handed to Config.Control.
var ControlRoutes = []string{"/v1/rooms/{room}/recording", "/v1/rooms/{room}/recording/", "/v1/rooms/{room}/layout", "/v1/rooms/{room}/layout/"}

//go:embed static
var staticFiles embed.FS

// New returns a Server reading from opts.Source. It panics when Source is
// nil (a wiring mistake, not a runtime condition).
func New(opts Config) *Server {
	if opts.Source == nil {
		panic("web: Config.Source is required")
	}
	if opts.Interval <= 0 {
		opts.Interval = 500 * time.Millisecond
	}
	if opts.MaxRooms <= 0 {
		opts.MaxRooms = 200
	}
	if opts.Stability == "" {
		opts.Stability = "hysteresis"
	}
	if opts.TopN <= 0 {
		opts.TopN = stability.DefaultN
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxStreamsPerClient <= 0 {
		opts.MaxStreamsPerClient = DefaultMaxStreamsPerClient
	}
	if opts.MaxStreamRooms <= 0 {
		opts.MaxStreamRooms = DefaultMaxStreamRooms
	}
	if hm, ok := opts.Metrics.(HTTPMetrics); ok && opts.HTTPMetrics == nil {
		opts.HTTPMetrics = hm
	}
	s := &Server{opt: opts, mux: http.NewServeMux(), lg: opts.Logger, stop: make(chan struct{})}
	s.h = problem.Handler(s.mux)
	s.hub = newHub(s)
	s.guard = newGuard(opts)
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, static, "index.html")
	})
	s.mux.Handle("GET /static/", noCache(http.StripPrefix("/static/", http.FileServerFS(static))))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if opts.Metrics != nil {
		s.mux.Handle("GET /metrics", opts.Metrics)
	}
	s.mux.HandleFunc("GET /v1/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(docs.OpenAPI)
	})
	s.mux.HandleFunc("GET /v1/rooms", s.rooms)
	s.mux.HandleFunc("GET /v1/rooms/{room}/top", s.roomTop)
	s.registerBoards()
	s.registerMembers() // members.go
	if opts.Control != nil {
		for _, p := range ControlRoutes {
			s.mux.Handle(p, opts.Control)
		}
	}
	s.mux.HandleFunc("GET /v1/events", s.events)
	return s
}

// ServeHTTP serves the routes listed in the package documentation.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opt.HTTPMetrics != nil {
		s.observe(s.opt.HTTPMetrics, w, r, s.serve)
		return
	}
	s.serve(w, r)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !s.guard.admit(w, r) {
		return
	}
	s.h.ServeHTTP(w, r)
}

// ListenAndServe listens on addr (tcp) and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln (HTTPS with Config.TLS) under Config.Limits until
// ctx ends, then shuts down gracefully: open event streams end at once,
// other requests get up to Config.ShutdownGrace to finish. It returns nil after a
// shutdown caused by ctx, or the serve error. It closes ln. After it
// returns the Server streams no more events.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return httpserve.Serve(ctx, ln, s, httpserve.Config{
		Limits:     s.opt.Limits,
		TLS:        s.opt.TLS,
		Grace:      s.opt.ShutdownGrace,
		OnShutdown: func() { s.once.Do(func() { close(s.stop) }) },
		Name:       "http",
		Logger:     s.lg,
	})
}

// ReadyClass is implemented by an error of Config.Ready that names the
// class of what is not ready ("redis", "kafka", "group", "batches"): the
// short, stable word /readyz sends. The error's own text is logged, never
// sent: it carries addresses and the text of Redis and Kafka errors.
type ReadyClass interface {
	ReadyClass() string
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opt.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := s.opt.Ready(ctx); err != nil {
			class := "unknown"
			var rc ReadyClass
			if errors.As(err, &rc) {
				class = rc.ReadyClass()
			}
			s.noteUnready(class, err)
			problem.Write(w, http.StatusServiceUnavailable, problem.Unavailable,
				"not ready: "+class+" (the cause is in the server's log)", map[string]any{"reason": class})
			return
		}
	}
	s.noteUnready("", nil)
	writeText(w, http.StatusOK, "ok")
}

// noteUnready logs the cause of a failing /readyz once per change of its
// text, not once per probe.
func (s *Server) noteUnready(class string, err error) {
	text := ""
	if err != nil {
		text = err.Error()
	}
	s.readyMu.Lock()
	changed := text != s.unready
	s.unready = text
	s.readyMu.Unlock()
	if changed && err != nil {
		s.lg.Warn("not ready", zap.String("reason", class), zap.Error(err))
	}
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(text))
}

// noCache makes the browser revalidate the page's files, so a new build is
// picked up on reload.
func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}
