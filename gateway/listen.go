package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// Serve answers HTTP (or, with tlsConfig, HTTPS) requests on ln until ctx
// ends, then stops accepting, lets pending requests finish for up to
// 15 seconds and returns nil. It closes ln.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config) error {
	srv := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       g.cfg.ProduceTimeout + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		TLSConfig:         tlsConfig,
		ErrorLog:          nil,
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return err
}
