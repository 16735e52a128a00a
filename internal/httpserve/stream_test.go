package httpserve

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestStreamOutlivesTimeouts: a streaming answer that lifts its deadlines
// keeps streaming past the read and write timeouts, and its request's
// context is not cancelled by them.
func TestStreamOutlivesTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	const ticks = 12
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		LiftWriteDeadline(w)
		rc := http.NewResponseController(w)
		for i := range ticks {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			fmt.Fprintf(w, "tick %d\n", i)
			if err := rc.Flush(); err != nil {
				return
			}
		}
	})
	lim := Limits{ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond, ReadHeaderTimeout: 100 * time.Millisecond}
	go func() { done <- Serve(ctx, ln, h, Config{Limits: lim}) }()
	t.Cleanup(func() { cancel(); <-done })
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		n++
	}
	if n != ticks {
		t.Fatalf("%d ticks arrived, want %d (the stream was cut: %v)", n, ticks, sc.Err())
	}
}
