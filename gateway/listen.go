package gateway

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/rostrumhq/rostrum/internal/httpserve"
)

// Serve answers HTTP (or, with tlsConfig, HTTPS) requests on ln until ctx
// ends, then stops accepting, lets pending requests finish for up to
// Config.ShutdownTimeout, cuts the rest and returns nil. It closes ln. The server's limits
// (internal/httpserve) follow the Config: a request must be read within
// ReadTimeout, and answered within ReadTimeout plus ProduceTimeout and a
// margin.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config) error {
	return httpserve.Serve(ctx, ln, g, httpserve.Config{
		Limits: httpserve.Limits{
			ReadTimeout:  g.cfg.ReadTimeout,
			WriteTimeout: g.cfg.ReadTimeout + g.cfg.ProduceTimeout + 5*time.Second,
		},
		TLS:    tlsConfig,
		Grace:  g.cfg.ShutdownTimeout,
		Name:   "gateway",
		Logger: g.cfg.Logger,
	})
}
