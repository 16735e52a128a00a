package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/browser"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDemo runs `rostrum demo` as `make run` does (on a free port) until its
// console view shows published stable lists, then stops it as Ctrl-C would.
func TestDemo(t *testing.T) {
	testenv.RedisBinary(t) // the demo runs a private redis-server
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"demo", "--kafka-port", "0", "--http", "127.0.0.1:0", "--gateway-http", "127.0.0.1:0", "--rooms", "3", "--members", "12"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(stdout.String(), "seq ") {
		select {
		case err := <-done:
			t.Fatalf("demo stopped early: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stable list shown within 2m\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}
	if !strings.Contains(stdout.String(), "Kafka broker  127.0.0.1:") {
		t.Fatalf("broker address not printed:\n%s", stdout.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("demo did not stop cleanly: %v\nstderr:\n%s", err, stderr.String())
	}
}

// TestDemoInBrowser loads the live page of a running demo (real pipeline,
// broker, Redis and simulated meeting) in headless chromium and checks that
// stable tiles appear and then change as the meeting goes on.
func TestDemoInBrowser(t *testing.T) {
	browser.ChromiumPath(t)
	testenv.RedisBinary(t)
	addr := startDemo(t, "--rooms", "2", "--members", "20")
	b := browser.Start(t, "http://"+addr+"/#r-0", 1280, 800)
	const tiles = `[...document.querySelectorAll('#stable > div.tile')].map(t => t.dataset.user).join()`
	b.WaitFor("tiles of room r-0", tiles+` !== ""`)
	var first string
	b.Eval(tiles, &first)
	b.WaitFor("the tiles to change", tiles+` !== `+browser.JSString(first))
	var later string
	b.Eval(tiles, &later)
	t.Logf("tiles %s, then %s", first, later)

	// The leaderboards page of the same demo: the example boards fill up
	// from the simulated gifts.
	bb := browser.Start(t, "http://"+addr+"/static/boards.html", 1280, 800)
	const gifts = `document.querySelectorAll('[data-board="room-gifts-7d"] tbody td.mono').length`
	bb.WaitFor("ranked rooms on the gift board", gifts+` > 0`)
	var boards int
	bb.Eval(`document.querySelectorAll('section.board').length`, &boards)
	if boards != 12 {
		t.Errorf("boards page shows %d boards, want the 12 of examples/boards.yaml", boards)
	}
}

// TestDemoCalmInBrowser loads a seeded demo room in headless chromium: the
// lively discussion of r-0. Once the page has counted enough visible
// changes of the seed merge of the raw lists it read, the published list
// (the hysteresis) has changed far less often: the page shows what the
// flicker benchmark shows. The page also shows the presenter of r-1 with
// the screen-share icon, and the count of ignored callbacks.
func TestDemoCalmInBrowser(t *testing.T) {
	browser.ChromiumPath(t)
	testenv.RedisBinary(t)
	addr := startDemo(t, "--rooms", "2", "--seed", "7", "--board-rate", "0")
	b := browser.Start(t, "http://"+addr+"/#r-0", 1280, 800)
	const rate = `parseInt((document.querySelector('.rate[data-k="%s"]') || {textContent: ''}).textContent.replace(/[^0-9]/g, '') || '0')`
	seed, published := fmt.Sprintf(rate, "merge"), fmt.Sprintf(rate, "published")
	// The count is of the last minute; 40 changes of the seed merge take
	// some 10 to 20 seconds of the discussion. Waited for in steps (one
	// WaitFor lasts at most 30 s).
	for i := 0; ; i++ {
		var n int
		b.Eval(seed, &n)
		if n >= 40 {
			break
		}
		if i == 100 {
			t.Fatalf("the seed merge changed only %d times", n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	var got struct{ Seed, Published int }
	b.Eval(`({seed: `+seed+`, published: `+published+`})`, &got)
	t.Logf("changes/min on the page: published %d, seed merge %d", got.Published, got.Seed)
	if got.Published*3 > got.Seed {
		t.Fatalf("published list %d changes, seed merge %d: want the published list well below", got.Published, got.Seed)
	}
	b.WaitFor("ignored callbacks counted", `parseInt((document.querySelector('[data-k="ignored"]') || {textContent: ''}).textContent.replace(/[^0-9]/g, '') || '0') > 0`)

	// r-1's meeting hands the screen share over; its first presenter starts
	// a few seconds in and takes a tile at once.
	b.Eval(`location.hash = '#r-1', true`, new(bool))
	b.WaitFor("a presenter's tile", `document.querySelector('#stable > div.tile[data-sharing] .icon.share.on') !== null`)
}

// startDemo runs `rostrum demo` with args on free ports (its broker, page and
// gateway) until the test ends, waits until it serves, and returns the
// page's address. The demo must stop cleanly at the end.
func startDemo(t *testing.T, args ...string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, append([]string{"demo", "--kafka-port", "0", "--http", addr, "--gateway-http", "127.0.0.1:0", "--show", "0"}, args...), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo did not stop cleanly: %v\n%s", err, stderr.String())
		}
	})
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stdout.String(), "live page") {
		if time.Now().After(deadline) {
			t.Fatalf("demo did not start:\n%s\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return addr
}
