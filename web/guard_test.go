package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/web"
)

func do(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	_, _ = io.ReadAll(res.Body)
	return res
}

// With --read-token-file every read of the API needs a token, by header or
// (for the page's event stream) by query; the probes, the page's files and
// the OpenAPI document stay open.
func TestReadTokens(t *testing.T) {
	p := filepath.Join(t.TempDir(), "read-tokens")
	if err := os.WriteFile(p, []byte("r3ad\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.LoadTokens(p)
	if err != nil {
		t.Fatal(err)
	}
	s := web.New(web.Config{Source: meetingSource(), ReadTokens: tokens, Logger: zaptest.NewLogger(t)})
	for _, c := range []struct {
		path string
		hdr  map[string]string
		want int
	}{
		{"/v1/rooms/r-1001/top", nil, 401},
		{"/v1/rooms/r-1001/top", map[string]string{"Authorization": "Bearer wrong"}, 401},
		{"/v1/rooms/r-1001/top", map[string]string{"Authorization": "Bearer r3ad"}, 200},
		{"/v1/rooms", nil, 401},
		// A token in a URL lands in logs: only the event stream, which
		// EventSource opens without headers, takes one there.
		{"/v1/rooms/r-1001/top?token=r3ad", nil, 401},
		{"/v1/rooms?token=r3ad", nil, 401},
		{"/v1/events?token=wrong", nil, 401},
		{"/healthz", nil, 200},
		{"/v1/openapi.yaml", nil, 200},
		{"/", nil, 200},
	} {
		res := do(t, s, http.MethodGet, c.path, c.hdr)
		if res.StatusCode != c.want {
			t.Errorf("GET %s %v: %d, want %d", c.path, c.hdr, res.StatusCode, c.want)
		}
		if c.want == 401 && res.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s: 401 as %q, want a problem", c.path, res.Header.Get("Content-Type"))
		}
	}
}

// The CORS policy answers listed origins only; without it no CORS header
// is sent.
func TestCORS(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource(), CORSOrigins: []string{"https://layout.example"}, Logger: zaptest.NewLogger(t)})
	res := do(t, s, http.MethodGet, "/v1/rooms/r-1001/top", map[string]string{"Origin": "https://layout.example"})
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != "https://layout.example" {
		t.Errorf("listed origin: %d, allow-origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	res = do(t, s, http.MethodGet, "/v1/rooms/r-1001/top", map[string]string{"Origin": "https://evil.example"})
	if res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("unlisted origin allowed: %q", res.Header.Get("Access-Control-Allow-Origin"))
	}
	res = do(t, s, http.MethodOptions, "/v1/rooms/r-1/recording/start", map[string]string{"Origin": "https://layout.example",
		"Access-Control-Request-Method": "POST"})
	if res.StatusCode != 204 || res.Header.Get("Access-Control-Allow-Methods") == "" {
		t.Errorf("preflight of a listed origin: %d, methods %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Methods"))
	}
	res = do(t, s, http.MethodOptions, "/v1/rooms/r-1/recording/start", map[string]string{"Origin": "https://evil.example"})
	if res.StatusCode != 403 {
		t.Errorf("preflight of an unlisted origin: %d, want 403", res.StatusCode)
	}
	// The answer depends on Origin whenever a policy is set: every answer
	// says so, also those to no or an unlisted origin, or a cache would
	// hand one origin's answer to another.
	for _, hdr := range []map[string]string{nil, {"Origin": "https://evil.example"}, {"Origin": "https://layout.example"}} {
		for _, path := range []string{"/v1/rooms/r-1001/top", "/v1/rooms/nowhere/top", "/v1/nothing"} {
			if res := do(t, s, http.MethodGet, path, hdr); !slices.Contains(res.Header.Values("Vary"), "Origin") {
				t.Errorf("GET %s %v: %d without Vary: Origin", path, hdr, res.StatusCode)
			}
		}
	}
	open := web.New(web.Config{Source: meetingSource(), Logger: zaptest.NewLogger(t)})
	res = do(t, open, http.MethodGet, "/v1/rooms/r-1001/top", map[string]string{"Origin": "https://layout.example"})
	if res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no policy, yet allow-origin %q", res.Header.Get("Access-Control-Allow-Origin"))
	}
}

// Past its burst a client gets 429 with Retry-After; another client and the
// probes are not affected.
func TestRateLimit(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource(), RateLimit: 0.001, RateBurst: 3, Logger: zaptest.NewLogger(t)})
	from := func(addr, path string) *http.Response {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = addr
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Result()
	}
	for i := range 3 {
		if res := from("10.0.0.1:5000", "/v1/rooms/r-1001/top"); res.StatusCode != 200 {
			t.Fatalf("request %d within the burst: %d", i+1, res.StatusCode)
		}
	}
	res := from("10.0.0.1:5001", "/v1/rooms/r-1001/top")
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("past the burst: %d, Retry-After %q, type %q", res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("Content-Type"))
	}
	if res := from("10.0.0.2:5000", "/v1/rooms/r-1001/top"); res.StatusCode != 200 {
		t.Errorf("another client: %d", res.StatusCode)
	}
	if res := from("10.0.0.1:5000", "/healthz"); res.StatusCode != 200 {
		t.Errorf("probe of a limited client: %d", res.StatusCode)
	}
	// An IPv6 host holds a /64: its addresses share one bucket, another
	// /64 has its own.
	for i := range 3 {
		if res := from(fmt.Sprintf("[2001:db8:1:2::%x]:5000", i+1), "/v1/rooms/r-1001/top"); res.StatusCode != 200 {
			t.Fatalf("IPv6 request %d within the burst: %d", i+1, res.StatusCode)
		}
	}
	if res := from("[2001:db8:1:2:ffff::9]:5000", "/v1/rooms/r-1001/top"); res.StatusCode != 429 {
		t.Errorf("another address of the same /64 past its burst: %d, want 429", res.StatusCode)
	}
	if res := from("[2001:db8:1:3::1]:5000", "/v1/rooms/r-1001/top"); res.StatusCode != 200 {
		t.Errorf("another /64: %d", res.StatusCode)
	}
}
