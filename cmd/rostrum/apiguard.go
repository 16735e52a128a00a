package main

import (
	"fmt"

	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/web"
)

// apiGuardFlags protect `rostrum run`'s read API (web/guard.go): read
// tokens, the CORS policy and a per-client rate limit.
type apiGuardFlags struct {
	readTokenFile string
	corsOrigins   string
	rateLimit     float64
	rateBurst     int
}

func (f *apiGuardFlags) register(fs *cli.FlagSet) {
	fs.Group("http").StringVar(&f.readTokenFile, "read-token-file", "", "bearer tokens for every read of the /v1 API, one a line, each at least 16 bytes (the live page passes ?token=); re-read on SIGHUP; empty: reads are open")
	fs.Group("http").Tuning().StringVar(&f.corsOrigins, "cors-origins", "", "origins whose pages may call the API from a browser, comma-separated (\"*\": any); empty: no CORS headers")
	fs.Group("http").Tuning().Float64Var(&f.rateLimit, "rate-limit", 0, "API requests per second per client address (429 with Retry-After beyond it); 0: no limit")
	fs.Group("http").Tuning().IntVar(&f.rateBurst, "rate-burst", 20, "requests a client may send at once before --rate-limit applies")
}

// apply checks the settings and sets them in opts. It reads the token file,
// so a bad one stops start-up before any connection.
func (f *apiGuardFlags) apply(opts *web.Config) error {
	switch {
	case f.rateLimit < 0:
		return fmt.Errorf("--rate-limit must not be negative (0: no limit), got %v", f.rateLimit)
	case f.rateBurst < 1:
		return fmt.Errorf("--rate-burst must be at least 1, got %d", f.rateBurst)
	}
	if f.readTokenFile != "" {
		t, err := loadTokens("--read-token-file", f.readTokenFile)
		if err != nil {
			return err
		}
		opts.ReadTokens = t
	}
	opts.CORSOrigins = cli.SplitList(f.corsOrigins)
	opts.RateLimit, opts.RateBurst = f.rateLimit, f.rateBurst
	return nil
}
