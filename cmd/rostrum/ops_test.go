package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/internal/httpserve"
)

// startAdmin serves the admin listener on a loopback port under lim until
// the test ends.
func startAdmin(t *testing.T, lim httpserve.Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveAdminOn(ctx, ln, lim, zaptest.NewLogger(t)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("admin listener: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// TestAdminRoutes: the admin listener serves the profiles but not the
// command line (it shows passwords given as flags), and answers every
// error, an unknown route, method or profile, as a problem.
func TestAdminRoutes(t *testing.T) {
	base := startAdmin(t, httpserve.Limits{})
	for _, c := range []struct {
		method, path string
		status       int
		code         string // of a problem
	}{
		{"GET", "/debug/pprof/", 200, ""},
		{"GET", "/debug/pprof/heap?debug=1", 200, ""},
		{"GET", "/debug/pprof/symbol", 200, ""},
		{"GET", "/debug/pprof/cmdline", 404, "not-found"},
		{"GET", "/debug/pprof/no-such-profile", 404, "not-found"},
		{"GET", "/", 404, "not-found"},
		{"GET", "/metrics", 404, "not-found"},
		{"POST", "/debug/pprof/heap", 405, "method-not-allowed"},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, res.StatusCode, c.status)
			continue
		}
		if c.code == "" {
			continue
		}
		var p struct{ Code string }
		if res.Header.Get("Content-Type") != "application/problem+json" || json.Unmarshal(body, &p) != nil || p.Code != c.code {
			t.Errorf("%s %s: %q %s, want a problem %s", c.method, c.path, res.Header.Get("Content-Type"), body, c.code)
		}
		if strings.Contains(string(body), os.Args[0]) {
			t.Errorf("%s %s: the command line leaked: %s", c.method, c.path, body)
		}
	}
}

// TestAdminSlowClient: the admin listener closes the connection of a
// client that trickles its request once the read timeout runs out.
func TestAdminSlowClient(t *testing.T) {
	base := startAdmin(t, httpserve.Limits{ReadTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "POST /debug/pprof/symbol HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0x")
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a guard against a hang, not a timing claim
	br := bufio.NewReader(c)
	if res, err := http.ReadResponse(br, nil); err == nil {
		res.Body.Close()
	}
	for {
		if _, err := br.ReadByte(); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the admin listener held a trickling client's connection for 20s")
			}
			return
		}
	}
}
