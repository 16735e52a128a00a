package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
	"github.com/rostrumhq/rostrum/web"
)

// sseEvent is one event of a text/event-stream; a comment has Event ":".
type sseEvent struct {
	Event, Data string
}

// openStream GETs url and returns a channel of its events, closed at the end
// of the stream, and a function that hangs up.
func openStream(t *testing.T, url string) (<-chan sseEvent, *http.Response, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ch := make(chan sseEvent, 128)
	go readEvents(res, ch)
	return ch, res, cancel
}

// readEvents sends the events of res's body to ch and closes ch at its end.
func readEvents(res *http.Response, ch chan<- sseEvent) {
	defer close(ch)
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				ch <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			ev.Event = ":"
		case strings.HasPrefix(line, "event: "):
			ev.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.Data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// next returns the next event named name, skipping others.
func next(t *testing.T, ch <-chan sseEvent, name string) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended before a %q event", name)
			}
			if ev.Event == name {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %q event within 10s", name)
		}
	}
}

func TestEventsRoom(t *testing.T) {
	var calls atomic.Int64
	counters := func() web.Counters {
		n := calls.Add(1)
		return web.Counters{Records: 10 * n, Events: 30 * n, DLQ: 2, Published: n, LagRecords: 7, LagSeconds: 1.5}
	}
	ts := httptest.NewServer(web.New(web.Config{Source: meetingSource(), Counters: counters,
		Interval: 20 * time.Millisecond, Logger: zaptest.NewLogger(t)}))
	t.Cleanup(ts.Close)
	ch, res, hangUp := openStream(t, ts.URL+"/v1/events?room=r-1001")
	defer hangUp()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}

	ev := next(t, ch, "room")
	var room struct {
		RoomID string `json:"room_id"`
		Seq    int64  `json:"seq"`
		Stable []struct {
			UserID string `json:"user_id"`
		} `json:"stable"`
	}
	if err := json.Unmarshal([]byte(ev.Data), &room); err != nil {
		t.Fatalf("%v in %s", err, ev.Data)
	}
	if room.RoomID != "r-1001" || room.Seq != 184 || len(room.Stable) != 7 || room.Stable[0].UserID != "host.wang" {
		t.Fatalf("room event %s", ev.Data)
	}

	type countersJSON struct {
		Records          int64    `json:"records"`
		Events           int64    `json:"events"`
		DLQ              int64    `json:"dlq"`
		Published        int64    `json:"published"`
		LagRecords       int64    `json:"lag_records"`
		LagSeconds       float64  `json:"lag_seconds"`
		EventsPerSecond  *float64 `json:"events_per_second"`
		RecordsPerSecond *float64 `json:"records_per_second"`
	}
	var c countersJSON
	_ = json.Unmarshal([]byte(next(t, ch, "counters").Data), &c)
	if c.DLQ != 2 || c.LagRecords != 7 || c.LagSeconds != 1.5 || c.EventsPerSecond != nil {
		t.Fatalf("first counters %+v: want the totals and no rate yet", c)
	}
	_ = json.Unmarshal([]byte(next(t, ch, "counters").Data), &c)
	if c.EventsPerSecond == nil || *c.EventsPerSecond <= 0 || c.RecordsPerSecond == nil || *c.RecordsPerSecond <= 0 {
		t.Fatalf("second counters %+v: want positive rates", c)
	}

	// The room does not change: it is not sent again; keep-alive comments
	// fill the stream when the counters do not change either.
	quiet := httptest.NewServer(web.New(web.Config{Source: meetingSource(), Interval: 10 * time.Millisecond}))
	t.Cleanup(quiet.Close)
	qch, _, qHangUp := openStream(t, quiet.URL+"/v1/events?room=r-1001")
	defer qHangUp()
	next(t, qch, "room")
	for range 3 {
		if ev := <-qch; ev.Event != ":" {
			t.Fatalf("unchanged room: got %q event, want keep-alive comments", ev.Event)
		}
	}
}

func TestEventsMissingAndBadRoom(t *testing.T) {
	ts := httptest.NewServer(web.New(web.Config{Source: meetingSource(), Interval: 10 * time.Millisecond}))
	t.Cleanup(ts.Close)
	ch, _, hangUp := openStream(t, ts.URL+"/v1/events?room=nobody")
	defer hangUp()
	if ev := next(t, ch, "missing"); !strings.Contains(ev.Data, "unknown room") {
		t.Fatalf("missing event %q", ev.Data)
	}
	ch2, _, hangUp2 := openStream(t, ts.URL+"/v1/events?room=broken")
	defer hangUp2()
	if ev := next(t, ch2, "unavailable"); !strings.Contains(ev.Data, `"code":"redis-unavailable"`) || strings.Contains(ev.Data, "refused") {
		t.Fatalf("unavailable event %q", ev.Data)
	}

	res, err := http.Get(ts.URL + "/v1/events?room=" + "a%7Bb%7D")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Fatalf("bad room id: status %d, want 400", res.StatusCode)
	}
}

// TestEventsEndWithClient checks that a stream's handler returns when its
// client goes away: ts.Close waits for every handler.
func TestEventsEndWithClient(t *testing.T) {
	ts := httptest.NewServer(web.New(web.Config{Source: meetingSource(), Interval: 10 * time.Millisecond}))
	ch, _, hangUp := openStream(t, ts.URL+"/v1/events?room=r-1001")
	next(t, ch, "room")
	hangUp()
	closed := make(chan struct{})
	go func() { ts.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream's handler still runs after its client left")
	}
}

// TestListenAndServeShutdown checks that ListenAndServe serves until its
// context ends, then ends open streams and returns nil.
func TestListenAndServeShutdown(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource(), Interval: 10 * time.Millisecond, Logger: zaptest.NewLogger(t)})
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx, addr) }()

	var ch <-chan sseEvent
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not up: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ch, _, hangUp := openStream(t, "http://"+addr+"/v1/events?room=r-1001")
	defer hangUp()
	next(t, ch, "room")

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ListenAndServe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListenAndServe did not return after its context ended")
	}
	for range ch { // the stream ends
	}
}

// TestEventsSeedMerge: the room event carries the merge of the raw
// lists the stream read, slot-sticky across reads, beside the processor's
// list and strategy.
func TestEventsSeedMerge(t *testing.T) {
	src := rotatingSource() // the raw top-7 shifts by one member per read
	ts := httptest.NewServer(web.New(web.Config{Source: src, Interval: 10 * time.Millisecond, Stability: "merge"}))
	t.Cleanup(ts.Close)
	ch, _, hangUp := openStream(t, ts.URL+"/v1/events?room=spin")
	defer hangUp()
	type room struct {
		Strategy string `json:"strategy"`
		Raw      []struct {
			UserID string `json:"user_id"`
		} `json:"raw"`
		Merge []struct {
			UserID string `json:"user_id"`
		} `json:"merge"`
	}
	var prev []string
	for i := 0; i < 4; i++ {
		var r room
		if err := json.Unmarshal([]byte(next(t, ch, "room").Data), &r); err != nil {
			t.Fatal(err)
		}
		var raw, seed []string
		for _, m := range r.Raw {
			raw = append(raw, m.UserID)
		}
		for _, m := range r.Merge {
			seed = append(seed, m.UserID)
		}
		if want := stability.Merge(nil, prev, raw, 7); r.Strategy != "merge" || !slices.Equal(seed, want) {
			t.Fatalf("read %d: strategy %q, seed %v; want the merge %v of %v into %v", i, r.Strategy, seed, want, raw, prev)
		}
		prev = seed
	}
}

// TestEventsOnePollForAllViewers: fifty streams of one room cost one read
// of the room, of the room list and of the counters per poll, not fifty. The
// Source holds every RoomView until the test lets it go, so the test steps
// through the polls one at a time: after k released reads, every stream has
// seen read k and at most one more read has begun.
func TestEventsOnePollForAllViewers(t *testing.T) {
	const viewers = 50
	gate := make(chan struct{})
	src := &fakeSource{rooms: meetingRooms()}
	src.view = func(room string) (ranking.RoomView, error) {
		n := src.calls.Load() // this read's number, from 1
		<-gate
		return ranking.RoomView{Room: room, Seq: n, Members: 3}, nil
	}
	var counterCalls atomic.Int64
	counters := func() web.Counters { return web.Counters{Events: 10 * counterCalls.Add(1)} }
	ts := httptest.NewServer(web.New(web.Config{Source: src, Counters: counters, Interval: time.Millisecond, MaxStreamsPerClient: viewers}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(gate) }) // first: let a held read end

	streams := make([]<-chan sseEvent, viewers)
	for i := range streams {
		ch, _, hangUp := openStream(t, ts.URL+"/v1/events?rooms=1&room=r-1001")
		t.Cleanup(hangUp)
		streams[i] = ch
	}
	for k := int64(1); k <= 5; k++ {
		gate <- struct{}{} // read k returns
		for i, ch := range streams {
			for {
				var room struct{ Seq int64 }
				decode(t, next(t, ch, "room").Data, &room)
				if room.Seq == k {
					break
				}
				if room.Seq > k {
					t.Fatalf("stream %d saw read %d before read %d was released", i, room.Seq, k)
				}
			}
		}
		if n := src.calls.Load(); n > k+1 {
			t.Fatalf("%d viewers, %d polls released: %d RoomView reads, want at most %d", viewers, k, n, k+1)
		}
		if n := counterCalls.Load(); n > k+1 {
			t.Fatalf("%d viewers, %d polls released: counters read %d times", viewers, k, n)
		}
		if n := src.roomsCalls.Load(); n > k+1 {
			t.Fatalf("%d viewers, %d polls released: room list read %d times", viewers, k, n)
		}
	}
	t.Logf("%d viewers: %d room reads, %d counter reads, %d room list reads", viewers,
		src.calls.Load(), counterCalls.Load(), src.roomsCalls.Load())
}

// TestEventsOpsCounters: the counters event carries the DLQ rate, the DLQ
// records by reason class and the lag by partition; a stream begins with the
// "series" event of the samples so far.
func TestEventsOpsCounters(t *testing.T) {
	var calls atomic.Int64
	counters := func() web.Counters {
		n := calls.Add(1)
		return web.Counters{Events: 100 * n, DLQ: 2 * n, LagRecords: 9, LagSeconds: 2.5,
			DLQByReason: map[string]int64{"json": n, "ts": n},
			Partitions:  []web.PartitionLag{{Topic: "prod.callbacks.rtc", Partition: 0, Records: 9, Seconds: 2.5}}}
	}
	ts := httptest.NewServer(web.New(web.Config{Source: meetingSource(), Counters: counters, Interval: 10 * time.Millisecond}))
	t.Cleanup(ts.Close)
	ch, _, hangUp := openStream(t, ts.URL+"/v1/events")
	defer hangUp()
	var series struct {
		IntervalMS int64            `json:"interval_ms"`
		Points     []map[string]any `json:"points"`
	}
	decode(t, next(t, ch, "series").Data, &series)
	if series.IntervalMS != 10 || series.Points == nil {
		t.Fatalf("series %+v", series)
	}
	var c struct {
		At           int64            `json:"at"`
		DLQPerSecond *float64         `json:"dlq_per_second"`
		DLQByReason  map[string]int64 `json:"dlq_by_reason"`
		Partitions   []struct {
			Topic      string  `json:"topic"`
			Partition  int32   `json:"partition"`
			LagRecords int64   `json:"lag_records"`
			LagSeconds float64 `json:"lag_seconds"`
		} `json:"partitions"`
	}
	for c.DLQPerSecond == nil {
		decode(t, next(t, ch, "counters").Data, &c)
	}
	if *c.DLQPerSecond <= 0 || c.At == 0 || c.DLQByReason["json"] == 0 || len(c.Partitions) != 1 ||
		c.Partitions[0].Topic != "prod.callbacks.rtc" || c.Partitions[0].LagRecords != 9 || c.Partitions[0].LagSeconds != 2.5 {
		t.Fatalf("counters %+v", c)
	}
	// A later stream starts with the samples taken so far.
	ch2, _, hangUp2 := openStream(t, ts.URL+"/v1/events")
	defer hangUp2()
	decode(t, next(t, ch2, "series").Data, &series)
	if len(series.Points) == 0 {
		t.Fatal("second stream: series without points")
	}
}
