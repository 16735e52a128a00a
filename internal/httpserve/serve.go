package httpserve

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// Limits bound what one client may hold of a server. Zero fields take the
// defaults.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers. default: 10s
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, headers and body: a body
	// that trickles in is cut when it runs out. default: 30s
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request's headers
	// to the end of the answer; streams lift it (LiftWriteDeadline).
	// default: 30s
	WriteTimeout time.Duration
	// IdleTimeout bounds how long a kept-alive connection waits for its
	// next request. default: 2m
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers. default: 64 KiB
	MaxHeaderBytes int
}

// Defaults of Limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultGrace             = 5 * time.Second
)

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return l
}

// Config configure Serve.
type Config struct {
	Limits
	// TLS, when not nil, serves HTTPS with it (see Cert.TLSConfig).
	TLS *tls.Config
	// Grace is how long requests in flight may finish once ctx ends.
	// default: 5s
	Grace time.Duration
	// OnShutdown, when not nil, runs when the shutdown begins (for
	// example to end open event streams at once).
	OnShutdown func()
	// Name names the listener in the log ("http", "admin", "gateway").
	Name string
	// Logger; nil means zap.NewNop().
	Logger *zap.Logger
}

// Server returns the http.Server that Serve runs, with the limits set:
// for callers that must hold the server themselves.
func Server(h http.Handler, o Config) *http.Server {
	l := o.Limits.withDefaults()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		TLSConfig:         o.TLS,
	}
	if o.OnShutdown != nil {
		srv.RegisterOnShutdown(o.OnShutdown)
	}
	return srv
}

// Serve answers requests on ln with h until ctx ends, then stops accepting,
// gives requests in flight o.Grace to finish, cuts the rest and returns
// nil. It returns the serve error if serving fails first. It closes ln.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, o Config) error {
	lg := o.Logger
	if lg == nil {
		lg = zap.NewNop()
	}
	grace := o.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	srv := Server(h, o)
	if o.TLS != nil {
		ln = tls.NewListener(ln, o.TLS)
	}
	lg.Info("http serving", zap.String("listener", o.Name), zap.String("addr", ln.Addr().String()), zap.Bool("tls", o.TLS != nil))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close() // the grace ran out: cut what is left
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	lg.Info("http stopped", zap.String("listener", o.Name), zap.Error(err))
	return err
}

// ListenAndServe listens on addr (tcp) and calls Serve.
func ListenAndServe(ctx context.Context, addr string, h http.Handler, o Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return Serve(ctx, ln, h, o)
}

// LiftWriteDeadline clears the write deadline of a streaming answer (an
// event stream lives as long as its client). It is a no-op for a writer
// that cannot set deadlines (a test recorder).
func LiftWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
}
