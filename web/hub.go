package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/internal/problem"
	"github.com/rostrumhq/rostrum/ranking"
)

// seriesLen is how many samples the hub keeps for the page's sparklines
// (two minutes at the default interval).
const seriesLen = 240

// roomsEvery is how often the hub reads the room list for the streams that
// asked for it (?rooms=1): a SCAN of the environment's keys is the costliest
// read, so it is taken less often than the rooms themselves.
const roomsEvery = 2 * time.Second

// hub takes one read of the Source and the counters per interval while at
// least one event stream is open, and hands the same read to every stream:
// with N viewers of a room, Redis sees one read of it per interval, not N,
// and the rooms of a poll are read in one call (one pipelined round trip
// with a BatchSource). A room is read only while a stream shows it; the
// room list only while a stream asked for it; nothing at all while no
// stream is open.
//
// A room found missing (no state) is not read again while it stays
// missing: its streams keep the "missing" event, and the room is read
// again once the room list, read anyway for the streams that asked for it
// (the live page does), names it. Made-up room ids thus cost one read
// each when their first stream opens, and none per interval.
//
// The hub also admits streams: at most Config.MaxStreams in all,
// MaxStreamsPerClient per client and MaxStreamRooms distinct rooms.
//
// Each stream has a mailbox of one frame: the hub overwrites a frame the
// stream has not taken yet, so a slow viewer skips reads and never slows
// the others. Safe for concurrent use.
type hub struct {
	s *Server

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	clients map[string]int         // client → its open streams
	rooms   map[string]*roomStatus // room → its streams and whether it is missing
	running bool
	last    *frame   // the last poll's frame, handed to a new stream at once
	series  []sample // the last seriesLen samples, oldest first
	failing map[string]bool
	polls   int64 // polls taken (the loop's tick count)
}

// frame is one poll's reads.
type frame struct {
	counters []byte              // the counters event; nil without Config.Counters
	sample   *sample             // the sample behind counters
	rooms    []byte              // the rooms event; nil when not read (yet)
	views    map[string]roomRead // room → its read
}

// roomRead is one room's read: its view, or the error.
type roomRead struct {
	view ranking.RoomView
	err  error
}

// sample is one point of the sparklines.
type sample struct {
	At              int64    `json:"at"` // Unix ms
	EventsPerSecond *float64 `json:"events_per_second"`
	DLQPerSecond    *float64 `json:"dlq_per_second"`
	LagRecords      int64    `json:"lag_records"`
	LagSeconds      float64  `json:"lag_seconds"`
}

// roomStatus is what the hub knows of a room the streams show.
type roomStatus struct {
	streams int  // open streams showing it
	missing bool // its last read found no state: not read until listed
}

// subscriber is one open stream's place in the hub.
type subscriber struct {
	room   string // "" for none
	rooms  bool   // wants the room list
	client string // clientKey of its request
	notify chan struct{}

	mu    sync.Mutex
	frame *frame
}

func newHub(s *Server) *hub {
	return &hub{s: s, subs: map[*subscriber]struct{}{}, clients: map[string]int{}, rooms: map[string]*roomStatus{}, failing: map[string]bool{}}
}

// take returns the frame waiting in the mailbox, if any.
func (sub *subscriber) take() *frame {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	f := sub.frame
	sub.frame = nil
	return f
}

func (sub *subscriber) put(f *frame) {
	sub.mu.Lock()
	sub.frame = f
	sub.mu.Unlock()
	select {
	case sub.notify <- struct{}{}:
	default:
	}
}

// refusal is why a stream was not admitted: the answer's status and
// detail.
type refusal struct {
	status int
	detail string
}

// subscribe admits a stream and starts the poll loop if it was not
// running. It returns the samples so far, for the stream's first "series"
// event, or why the stream is refused (and then holds nothing).
func (h *hub) subscribe(sub *subscriber) ([]sample, *refusal) {
	sub.notify = make(chan struct{}, 1)
	o := &h.s.opt
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case len(h.subs) >= o.MaxStreams:
		return nil, &refusal{http.StatusServiceUnavailable, fmt.Sprintf("%d event streams are open, the most this server holds (--max-streams); retry later", o.MaxStreams)}
	case h.clients[sub.client] >= o.MaxStreamsPerClient:
		return nil, &refusal{http.StatusTooManyRequests, fmt.Sprintf("this client holds %d event streams open, the most one client may (--max-streams-per-client); close one or retry later", o.MaxStreamsPerClient)}
	case sub.room != "" && h.rooms[sub.room] == nil && len(h.rooms) >= o.MaxStreamRooms:
		return nil, &refusal{http.StatusServiceUnavailable, fmt.Sprintf("the open event streams show %d rooms, the most this server reads (--max-stream-rooms); retry later", o.MaxStreamRooms)}
	}
	h.subs[sub] = struct{}{}
	h.clients[sub.client]++
	if sub.room != "" {
		st := h.rooms[sub.room]
		if st == nil {
			st = &roomStatus{}
			h.rooms[sub.room] = st
		}
		st.streams++
	}
	if l := h.last; l != nil {
		if _, ok := l.views[sub.room]; ok || sub.room == "" {
			sub.put(l)
		}
	}
	if !h.running {
		h.running = true
		go h.run()
	}
	return append([]sample(nil), h.series...), nil
}

func (h *hub) unsubscribe(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[sub]; !ok {
		return
	}
	delete(h.subs, sub)
	if h.clients[sub.client]--; h.clients[sub.client] <= 0 {
		delete(h.clients, sub.client)
	}
	if st := h.rooms[sub.room]; st != nil {
		if st.streams--; st.streams <= 0 {
			delete(h.rooms, sub.room)
		}
	}
}

// wanted reports whether a stream wants the room list; ok is false when no
// stream is open, and the loop then stops.
func (h *hub) wanted() (list, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		h.running = false
		h.last = nil
		return false, false
	}
	for sub := range h.subs {
		list = list || sub.rooms
	}
	return list, true
}

// toRead returns the rooms to read this poll and those known missing.
func (h *hub) toRead() (read, missing []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for room, st := range h.rooms {
		if st.missing {
			missing = append(missing, room)
		} else {
			read = append(read, room)
		}
	}
	return read, missing
}

// listed marks the missing rooms the room list names as present again, to
// be read from the next poll on.
func (h *hub) listed(ids []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		if st := h.rooms[id]; st != nil {
			st.missing = false
		}
	}
}

// markMissing stops reading a room whose read found no state.
func (h *hub) markMissing(room string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.rooms[room]; st != nil {
		st.missing = true
	}
}

// readViews reads rooms: in one call when the Source is a BatchSource.
func (h *hub) readViews(ctx context.Context, rooms []string) []roomRead {
	out := make([]roomRead, len(rooms))
	if bs, ok := h.s.opt.Source.(BatchSource); ok {
		if len(rooms) == 0 {
			return out
		}
		views, errs := bs.RoomViews(ctx, rooms)
		for i := range rooms {
			out[i] = roomRead{views[i], errs[i]}
		}
		return out
	}
	for i, room := range rooms {
		v, err := h.s.opt.Source.RoomView(ctx, room)
		out[i] = roomRead{v, err}
	}
	return out
}

func (h *hub) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(h.s.opt.Interval)
	defer t.Stop()
	var (
		prev      Counters
		prevTime  time.Time
		sampled   bool
		rooms     []byte
		roomsRead time.Time
	)
	for {
		list, ok := h.wanted()
		if !ok {
			return
		}
		if list && (rooms == nil || time.Since(roomsRead) >= roomsEvery) {
			if ids, b, err := h.readRooms(ctx); err == nil {
				rooms, roomsRead = b, time.Now()
				h.listed(ids)
			}
		}
		want, missing := h.toRead()
		f := &frame{views: make(map[string]roomRead, len(want)+len(missing))}
		if list {
			f.rooms = rooms
		}
		for i, read := range h.readViews(ctx, want) {
			room := want[i]
			f.views[room] = read
			h.noteFailure(ctx, room, read.err)
			if errors.Is(read.err, ranking.ErrUnknownRoom) {
				h.markMissing(room)
			}
		}
		for _, room := range missing { // known missing: not read
			f.views[room] = roomRead{err: ranking.ErrUnknownRoom}
		}
		if h.s.opt.Counters != nil {
			now := time.Now()
			c := h.s.opt.Counters()
			out, smp := countersEvent(c, prev, prevTime, sampled, now)
			prev, prevTime, sampled = c, now, true
			f.counters, f.sample = out, &smp
		}
		h.publish(f)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publish hands f to every open stream and keeps its sample.
func (h *hub) publish(f *frame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.polls++
	h.last = f
	if f.sample != nil {
		if len(h.series) == seriesLen {
			h.series = append(h.series[:0], h.series[1:]...)
		}
		h.series = append(h.series, *f.sample)
	}
	for sub := range h.subs {
		sub.put(f)
	}
}

// noteFailure logs a room's failing read once per run of failures.
func (h *hub) noteFailure(ctx context.Context, room string, err error) {
	failed := err != nil && !errors.Is(err, ranking.ErrUnknownRoom)
	h.mu.Lock()
	was := h.failing[room]
	if failed {
		h.failing[room] = true
	} else {
		delete(h.failing, room)
	}
	h.mu.Unlock()
	if failed && !was && ctx.Err() == nil {
		h.s.lg.Warn("event stream: read room failed", zap.String("room", room), zap.Error(err))
	}
}

// readRooms reads the room list: the rooms' ids and the rooms event's
// data.
func (h *hub) readRooms(ctx context.Context) ([]string, []byte, error) {
	rooms, err := h.s.opt.Source.Rooms(ctx, h.s.opt.MaxRooms)
	if err != nil {
		if ctx.Err() == nil {
			h.s.lg.Warn("event stream: read rooms failed", zap.Error(err))
		}
		return nil, nil, err
	}
	ids := make([]string, len(rooms))
	for i, rm := range rooms {
		ids[i] = rm.Room
	}
	return ids, mustJSON(toSummaries(rooms)), nil
}

// unavailableJSON is the data of an "unavailable" event: a problem naming
// the class of the failure, never the Redis error's text.
func unavailableJSON() []byte {
	return problem.Marshal(problem.New(503, problem.RedisUnavailable, "the room could not be read from Redis"), nil)
}
