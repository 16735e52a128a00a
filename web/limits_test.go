package web_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/internal/httpserve"
	"github.com/rostrumhq/rostrum/internal/problem"
	"github.com/rostrumhq/rostrum/web"
)

// serve runs s.Serve on a loopback port until the test ends and returns
// the address.
func serve(t *testing.T, s *web.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestSlowBodyIsCut: a client that sends the headers of a control write
// and then trickles its body has its connection closed by the server once
// the read timeout runs out, whether or not the route reads the body (a
// request without a token is answered 401 unread).
func TestSlowBodyIsCut(t *testing.T) {
	readsBody := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			problem.Write(w, http.StatusBadRequest, problem.BadRequest, "body cut", nil)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	refuses := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, http.StatusUnauthorized, problem.Unauthorized, "missing or invalid bearer token", nil)
	})
	for name, control := range map[string]http.Handler{"with a token": readsBody, "without a token": refuses} {
		t.Run(name, func(t *testing.T) {
			addr := serve(t, web.New(web.Config{Source: meetingSource(), Control: control, Logger: zaptest.NewLogger(t),
				Limits: httpserve.Limits{ReadTimeout: 300 * time.Millisecond}}))
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, _ = io.WriteString(c, "PUT /v1/rooms/r-0/layout HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\":")
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a guard against a hang, not a timing claim
			br := bufio.NewReader(c)
			if res, err := http.ReadResponse(br, nil); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					t.Fatal("a body 995 bytes short was read whole")
				}
			}
			for { // whatever was answered, the server closes the connection
				if _, err := br.ReadByte(); err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						t.Fatal("the server held a trickling client's connection for 20s")
					}
					return
				}
			}
		})
	}
}

// TestStreamOutlivesTimeouts: an event stream lifts its write deadline:
// it goes on delivering events long after the server's write timeout.
func TestStreamOutlivesTimeouts(t *testing.T) {
	lim := httpserve.Limits{ReadHeaderTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond}
	addr := serve(t, web.New(web.Config{Source: rotatingSource(), Interval: 10 * time.Millisecond, Limits: lim, Logger: zaptest.NewLogger(t)}))
	ch, _, hangUp := openStream(t, "http://"+addr+"/v1/events?room=spin")
	defer hangUp()
	next(t, ch, "room")
	time.Sleep(500 * time.Millisecond) // five write timeouts
	for len(ch) > 0 {
		<-ch
	}
	next(t, ch, "room")
}

// TestUnknownRouteAndMethod: a path no route takes answers 404, a method a
// route does not take 405 with Allow, both as problems, as does a file the
// page does not have.
func TestUnknownRouteAndMethod(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource(), Logger: zaptest.NewLogger(t)})
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v1/nothing", 404, "not-found"},
		{"GET", "/static/nothing.js", 404, "not-found"},
		{"POST", "/v1/rooms", 405, "method-not-allowed"},
		{"DELETE", "/v1/rooms/r-1001/top", 405, "method-not-allowed"},
		{"PUT", "/healthz", 405, "method-not-allowed"},
	} {
		res := do(t, s, c.method, c.path, nil)
		if res.StatusCode != c.status || res.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("%s %s: %d %q, want %d as a problem", c.method, c.path, res.StatusCode, res.Header.Get("Content-Type"), c.status)
		}
		if c.status == 405 && !strings.Contains(res.Header.Get("Allow"), "GET") {
			t.Errorf("%s %s: Allow %q", c.method, c.path, res.Header.Get("Allow"))
		}
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/rooms", nil))
	var p problem.Details
	decode(t, rec.Body.String(), &p)
	if p.Code != "method-not-allowed" || p.Status != 405 {
		t.Errorf("405 body %s", rec.Body)
	}
}

// TestHeaderLimit: headers over the limit (64 KiB by default) are refused
// with 431 before any route runs.
func TestHeaderLimit(t *testing.T) {
	addr := serve(t, web.New(web.Config{Source: meetingSource(), Logger: zaptest.NewLogger(t)}))
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/rooms", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 100<<10))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB of headers: %d, want 431", res.StatusCode)
	}
}
