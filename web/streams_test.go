package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/web"
)

var _ web.BatchSource = (*sink.Store)(nil)

// clientFrom returns an HTTP client whose connections come from the
// loopback address ip (127.0.0.2, …): another client to the server.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// tryStream opens a stream; it returns the events of an admitted one, or
// nil and the refusal's status, Retry-After and problem code.
func tryStream(t *testing.T, c *http.Client, url string) (events <-chan sseEvent, status int, retryAfter, code string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		var p struct{ Code string }
		_ = json.NewDecoder(res.Body).Decode(&p)
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("refused stream answered %q, want a problem", ct)
		}
		return nil, res.StatusCode, res.Header.Get("Retry-After"), p.Code
	}
	t.Cleanup(func() { res.Body.Close() })
	ch := make(chan sseEvent, 128)
	go readEvents(res, ch)
	return ch, res.StatusCode, "", ""
}

// TestEventsStreamLimits: streams are admitted up to MaxStreams in all,
// MaxStreamsPerClient per client and MaxStreamRooms distinct rooms; one
// more answers 429 (a client's own limit) or 503 (the server's), with
// Retry-After, and a closed stream frees its place.
func TestEventsStreamLimits(t *testing.T) {
	ts := httptest.NewServer(web.New(web.Config{Source: meetingSource(), Interval: 10 * time.Millisecond,
		MaxStreams: 3, MaxStreamsPerClient: 2, MaxStreamRooms: 2, Logger: zaptest.NewLogger(t)}))
	t.Cleanup(ts.Close)
	one, two := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	u := ts.URL + "/v1/events"

	ctx, hangUp := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"?room=r-1001", nil)
	first, err := one.Do(req)
	if err != nil || first.StatusCode != 200 {
		t.Fatalf("first stream: %v %v", err, first)
	}
	defer first.Body.Close()
	for _, c := range []struct {
		what   string
		client *http.Client
		query  string
		status int
		code   string
	}{
		{"a second stream of a client, another room", one, "?room=quiet", 200, ""},
		{"a third stream of a client", one, "?room=r-1001", 429, "too-many-requests"},
		{"a third room", two, "?room=nobody", 503, "unavailable"},
		{"another client, a room already shown", two, "?room=r-1001", 200, ""},
		{"a fourth stream in all", two, "", 503, "unavailable"},
	} {
		_, status, retry, code := tryStream(t, c.client, u+c.query)
		if status != c.status || code != c.code || (status != 200 && retry == "") {
			t.Errorf("%s: %d %q Retry-After %q, want %d %q", c.what, status, code, retry, c.status, c.code)
		}
	}
	hangUp() // the first stream ends: its place is free again
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, status, _, _ := tryStream(t, two, u)
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stream ended, yet a new one is still refused: %d", status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEventsDefaultLimits: with the defaults, one client cannot open a
// stream for each of thirty made-up rooms.
func TestEventsDefaultLimits(t *testing.T) {
	ts := httptest.NewServer(web.New(web.Config{Source: meetingSource(), Interval: 10 * time.Millisecond}))
	t.Cleanup(ts.Close)
	admitted := 0
	for i := range 30 {
		if _, status, _, _ := tryStream(t, http.DefaultClient, fmt.Sprintf("%s/v1/events?room=made-up-%d", ts.URL, i)); status == 200 {
			admitted++
		}
	}
	if admitted != web.DefaultMaxStreamsPerClient {
		t.Fatalf("%d of 30 streams of one client admitted, want %d", admitted, web.DefaultMaxStreamsPerClient)
	}
}

// countingSource counts the reads of each room; a room exists once
// created.
type countingSource struct {
	mu      sync.Mutex
	reads   map[string]int
	exists  map[string]bool
	batches [][]string // the rooms of each RoomViews call (batch mode)
}

func (c *countingSource) Rooms(ctx context.Context, max int) ([]ranking.RoomSummary, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ranking.RoomSummary
	for room := range c.exists {
		out = append(out, ranking.RoomSummary{Room: room, Seq: 1, Members: 1})
	}
	return out, nil
}

func (c *countingSource) RoomView(ctx context.Context, room string) (ranking.RoomView, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.view(room)
}

// view counts a read of room and returns it; the caller holds mu.
func (c *countingSource) view(room string) (ranking.RoomView, error) {
	c.reads[room]++
	if !c.exists[room] {
		return ranking.RoomView{}, ranking.ErrUnknownRoom
	}
	return ranking.RoomView{Room: room, Seq: 1, Members: 1}, nil
}

func (c *countingSource) read(room string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[room]
}

func (c *countingSource) create(room string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exists[room] = true
}

// batchSource is a countingSource that reads many rooms in one call. A
// call records its batch and counts its reads under one lock, so that a
// test reading the counts while the hub polls sees both or neither.
type batchSource struct{ *countingSource }

func (b batchSource) RoomViews(ctx context.Context, rooms []string) ([]ranking.RoomView, []error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batches = append(b.batches, append([]string(nil), rooms...))
	views, errs := make([]ranking.RoomView, len(rooms)), make([]error, len(rooms))
	for i, room := range rooms {
		views[i], errs[i] = b.view(room)
	}
	return views, errs
}

// pollCounter counts the hub's polls through the counters it reads once
// per poll.
type pollCounter struct{ n atomic.Int64 }

func (p *pollCounter) counters() web.Counters { p.n.Add(1); return web.Counters{} }

// await waits (with a guard deadline) until the hub polled n more times.
func (p *pollCounter) await(t *testing.T, n int64) {
	t.Helper()
	until := p.n.Load() + n
	deadline := time.Now().Add(10 * time.Second)
	for p.n.Load() < until {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d polls within 10s", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEventsUnknownRoomNotPolled: a stream for a room with no state reads
// it once and then not per poll; once the room list (which the stream
// asked for, as the live page does) names the room, it is read again and
// shown.
func TestEventsUnknownRoomNotPolled(t *testing.T) {
	src := &countingSource{reads: map[string]int{}, exists: map[string]bool{}}
	var polls pollCounter
	ts := httptest.NewServer(web.New(web.Config{Source: src, Counters: polls.counters, Interval: time.Millisecond}))
	t.Cleanup(ts.Close)
	ch, _, hangUp := openStream(t, ts.URL+"/v1/events?rooms=1&room=made-up")
	defer hangUp()
	next(t, ch, "missing")
	polls.await(t, 50)
	if n := src.read("made-up"); n != 1 {
		t.Fatalf("a missing room was read %d times in 50 polls, want once", n)
	}
	// A second stream for it reads nothing either.
	ch2, _, hangUp2 := openStream(t, ts.URL+"/v1/events?room=made-up")
	defer hangUp2()
	next(t, ch2, "missing")
	polls.await(t, 20)
	if n := src.read("made-up"); n != 1 {
		t.Fatalf("a second stream of a missing room: %d reads, want 1", n)
	}
	src.create("made-up")
	if ev := next(t, ch, "room"); ev.Data == "" {
		t.Fatal("empty room event")
	}
}

// TestEventsPollIsOneBatch: with a BatchSource, every poll reads all the
// streamed rooms in one call, each room once however many streams show
// it, and never one by one.
func TestEventsPollIsOneBatch(t *testing.T) {
	cs := &countingSource{reads: map[string]int{}, exists: map[string]bool{"r-1": true, "r-2": true}}
	src := batchSource{cs}
	var polls pollCounter
	ts := httptest.NewServer(web.New(web.Config{Source: src, Counters: polls.counters, Interval: time.Millisecond}))
	t.Cleanup(ts.Close)
	for _, room := range []string{"r-1", "r-2", "r-1", "gone"} {
		ch, _, hangUp := openStream(t, ts.URL+"/v1/events?room="+room)
		t.Cleanup(hangUp)
		if room == "gone" {
			next(t, ch, "missing")
		} else {
			next(t, ch, "room")
		}
	}
	polls.await(t, 20)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	single, gone, batched := 0, 0, 0
	for _, n := range cs.reads {
		single += n
	}
	for _, b := range cs.batches {
		seen := map[string]bool{}
		for _, room := range b {
			if seen[room] {
				t.Fatalf("batch %v reads a room twice", b)
			}
			seen[room] = true
			if room == "gone" {
				gone++
			}
		}
		batched += len(b)
	}
	if single != batched {
		t.Fatalf("%d reads, %d of them in batches: the poll read rooms one by one", single, batched)
	}
	if len(cs.batches) < 20 || gone != 1 {
		t.Fatalf("%d batches, %d reads of the missing room; want 20 or more, 1", len(cs.batches), gone)
	}
}
