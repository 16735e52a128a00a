package web

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
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
//   - CORS (Config.CORSOrigins): a request whose Origin is listed (or "*"
//     is) gets Access-Control-Allow-Origin and the headers a browser needs
//     to call the API; a preflight (OPTIONS) from a listed origin answers
//     204, from another one 403. Without the option no CORS header is sent,
//     so browsers keep the API to pages of its own origin.
//     Every answer then carries "Vary: Origin", allowed or not, so that a
//     cache never hands one origin's answer to another.
//   - Rate limit (Config.RateLimit, RateBurst): every API request (/v1/…)
//     of one client draws from that client's token bucket; an empty
//     bucket answers 429 with Retry-After. A client is an
//     IPv4 address or an IPv6 /64 (one host's usual share: keying by the
//     full address would hand it 2^64 buckets). The buckets of the
//     maxClients clients seen last are kept; past that the least recently
//     used is dropped (and starts full when its client returns).
//   - Read tokens (Config.ReadTokens): every read of the API (GET or HEAD
//     of /v1/…) needs a token of the set, as "Authorization: Bearer
//     <token>" or, on the event stream only
//     (EventSource cannot set headers), a token query parameter: a token
//     in a URL lands in access logs and browser history, so no other
//     route takes it there. The
//     control routes keep their own tokens, the board remove route the
//     admin tokens, and /healthz, /readyz, /metrics, the page's files and
//     /v1/openapi.yaml stay open.
type guard struct {
	origins []string
	tokens  *auth.Tokens
	limit   xrate.Limit
	burst   int

	mu         sync.Mutex
	maxClients int
	clients    map[string]*list.Element // client → its entry in lru
	lru        list.List                // of *bucket, most recently used first
}

// bucket is one client's token bucket.
type bucket struct {
	client string
	lim    *xrate.Limiter
}

// maxClients bounds the buckets kept; past it the least recently used is
// dropped and starts full again, which only ever lets a client through,
// never refuses one.
const maxClients = 100_000

func newGuard(o Config) *guard {
	g := &guard{origins: o.CORSOrigins, tokens: o.ReadTokens, maxClients: maxClients, clients: map[string]*list.Element{}}
	if o.RateLimit > 0 {
		g.limit, g.burst = xrate.Limit(o.RateLimit), max(o.RateBurst, 1)
	}
	return g
}

// apiPath reports whether path is one of the API's (not the page's files or
// the probes).
func apiPath(path string) bool {
	return strings.HasPrefix(path, "/v1/")
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
	if len(g.origins) > 0 {
		w.Header().Add("Vary", "Origin")
	}
	if origin := r.Header.Get("Origin"); origin != "" && len(g.origins) > 0 {
		allowed := slices.Contains(g.origins, "*") || slices.Contains(g.origins, origin)
		if allowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
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
	if g.limit > 0 && apiPath(r.URL.Path) && !g.limiter(clientKey(r)).Allow() {
		w.Header().Set("Retry-After", "1")
		problem.Write(w, http.StatusTooManyRequests, problem.TooManyRequests, "over this client's request rate (--rate-limit); retry later", nil)
		return false
	}
	if g.tokens != nil && readPath(r) {
		token := auth.Bearer(r)
		if token == "" && streamPath(r.URL.Path) {
			token = r.URL.Query().Get("token")
		}
		if !g.tokens.Valid(token) {
			problem.Write(w, http.StatusUnauthorized, problem.Unauthorized, "missing or invalid read token (--read-token-file): send Authorization: Bearer <token>", nil)
			return false
		}
	}
	return true
}

// streamPath reports whether path is the event stream's, the one route
// that takes its read token as a query parameter.
func streamPath(path string) bool { return path == "/v1/events" }

// limiter returns the token bucket of client, now the most recently used.
func (g *guard) limiter(client string) *xrate.Limiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.clients[client]; ok {
		g.lru.MoveToFront(e)
		return e.Value.(*bucket).lim
	}
	if g.lru.Len() >= g.maxClients {
		old := g.lru.Back()
		g.lru.Remove(old)
		delete(g.clients, old.Value.(*bucket).client)
	}
	b := &bucket{client: client, lim: xrate.NewLimiter(g.limit, g.burst)}
	g.clients[client] = g.lru.PushFront(b)
	return b.lim
}

// clientKey is the client a request is counted against (rate limit,
// event streams): its IPv4 address, or the /64 of its IPv6 address. Behind
// a proxy every request shares the proxy's address: put the limits on the
// proxy then, or run without them here.
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.WithZone("").Prefix(64)
	return p.String()
}
