package web

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	xrate "golang.org/x/time/rate"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/internal/problem"
)

// The guard runs before every route: the CORS policy, the per-client rate
// limit, and the read tokens. Each is off unless its option is set.
//
//   - CORS (Options.CORSOrigins): a request whose Origin is listed (or "*"
//     is) gets Access-Control-Allow-Origin and the headers a browser needs
//     to call the API; a preflight (OPTIONS) from a listed origin answers
//     204, from another one 403. Without the option no CORS header is sent,
//     so browsers keep the API to pages of its own origin.
//   - Rate limit (Options.RateLimit, RateBurst): every API request (/v1/…,
//     /api/…, /events) of one client address draws from that address's
//     token bucket; an empty bucket answers 429 with Retry-After.
//   - Read tokens (Options.ReadTokens): every read of the API (GET or HEAD
//     of /v1/…, /api/rooms, /events) needs a token of the set, as
//     "Authorization: Bearer <token>" or, for the live page's event stream
//     (EventSource cannot set headers), a token query parameter. The
//     control routes keep their own tokens, the board remove route the
//     admin tokens, and /healthz, /readyz, /metrics, the page's files and
//     /v1/openapi.yaml stay open.
type guard struct {
	origins []string
	tokens  *auth.Tokens
	limit   xrate.Limit
	burst   int

	mu      sync.Mutex
	clients map[string]*xrate.Limiter
}

// maxClients bounds the limiters kept; past it they are dropped and start
// full again, which only ever lets a client through, never refuses one.
const maxClients = 100_000

func newGuard(o Options) *guard {
	g := &guard{origins: o.CORSOrigins, tokens: o.ReadTokens, clients: map[string]*xrate.Limiter{}}
	if o.RateLimit > 0 {
		g.limit, g.burst = xrate.Limit(o.RateLimit), max(o.RateBurst, 1)
	}
	return g
}

// apiPath reports whether path is one of the API's (not the page's files or
// the probes).
func apiPath(path string) bool {
	return strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/api/") || path == "/events"
}

// readPath reports whether a request is a read the read tokens guard.
func readPath(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	if p == "/v1/openapi.yaml" || !apiPath(p) {
		return false
	}
	// The control routes answer for their own tokens.
	if strings.HasPrefix(p, "/v1/rooms/") && (strings.HasSuffix(p, "/recording") || strings.HasSuffix(p, "/layout")) {
		return false
	}
	return true
}

// admit applies the guard to r; it returns false when it answered already.
func (g *guard) admit(w http.ResponseWriter, r *http.Request) bool {
	if origin := r.Header.Get("Origin"); origin != "" && len(g.origins) > 0 {
		allowed := slices.Contains(g.origins, "*") || slices.Contains(g.origins, origin)
		if allowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "ETag, X-Request-Id, Retry-After")
		}
		if r.Method == http.MethodOptions {
			if !allowed {
				problem.Write(w, http.StatusForbidden, problem.Forbidden, "origin "+origin+" is not allowed (--cors-origins)", nil)
				return false
			}
			h := w.Header()
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return false
		}
	}
	if g.limit > 0 && apiPath(r.URL.Path) && !g.limiter(clientOf(r)).Allow() {
		w.Header().Set("Retry-After", "1")
		problem.Write(w, http.StatusTooManyRequests, problem.TooManyRequests, "over this client's request rate (--rate-limit); retry later", nil)
		return false
	}
	if g.tokens != nil && readPath(r) {
		token := auth.Bearer(r)
		if token == "" {
			token = r.URL.Query().Get("token")
		}
		if !g.tokens.Valid(token) {
			problem.Write(w, http.StatusUnauthorized, problem.Unauthorized, "missing or invalid read token (--read-token-file): send Authorization: Bearer <token>", nil)
			return false
		}
	}
	return true
}

// limiter returns the token bucket of client.
func (g *guard) limiter(client string) *xrate.Limiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	l, ok := g.clients[client]
	if !ok {
		if len(g.clients) >= maxClients {
			clear(g.clients)
		}
		l = xrate.NewLimiter(g.limit, g.burst)
		g.clients[client] = l
	}
	return l
}

// clientOf is the request's client address without its port. Behind a
// proxy every request shares the proxy's address: put the limit on the
// proxy then, or run without one here.
func clientOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
