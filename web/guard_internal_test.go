package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRateLimitEvictsLeastRecent: past maxClients buckets the least
// recently used one is dropped, not all of them: a busy client that
// emptied its bucket stays limited however many other clients come by.
func TestRateLimitEvictsLeastRecent(t *testing.T) {
	g := newGuard(Config{RateLimit: 0.001, RateBurst: 1})
	g.maxClients = 3
	admit := func(addr string) int {
		req := httptest.NewRequest(http.MethodGet, "/v1/rooms", nil)
		req.RemoteAddr = addr + ":1000"
		rec := httptest.NewRecorder()
		if g.admit(rec, req) {
			return http.StatusOK
		}
		return rec.Code
	}
	if admit("10.0.0.1") != 200 || admit("10.0.0.1") != 429 {
		t.Fatal("a burst of 1 did not limit the second request")
	}
	for i := range 10 {
		if got := admit(fmt.Sprintf("10.0.1.%d", i)); got != 200 {
			t.Fatalf("new client %d: %d", i, got)
		}
		if got := admit("10.0.0.1"); got != 429 {
			t.Fatalf("after %d other clients the busy client got %d, want 429 (its bucket was dropped)", i+1, got)
		}
	}
	if n := len(g.clients); n != 3 || g.lru.Len() != 3 {
		t.Fatalf("%d buckets kept (%d in the list), want 3", n, g.lru.Len())
	}
}
