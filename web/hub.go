package web

import (
	"context"
	"errors"
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
// with N viewers of a room, Redis sees one RoomView per interval, not N. A
// room is read only while a stream shows it; the room list only while a
// stream asked for it; nothing at all while no stream is open.
//
// Each stream has a mailbox of one frame: the hub overwrites a frame the
// stream has not taken yet, so a slow viewer skips reads and never slows
// the others. Safe for concurrent use.
type hub struct {
	s *Server

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	running bool
	last    *frame   // the last poll's frame, handed to a new stream at once
	series  []sample // the last seriesLen samples, oldest first
	failing map[string]bool
	polls   int64 // polls taken (the loop's tick count)
}

// frame is one poll's reads.
type frame struct {
	counters []byte              // the counters event; nil without Options.Counters
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

// subscriber is one open stream's place in the hub.
type subscriber struct {
	room   string // "" for none
	rooms  bool   // wants the room list
	notify chan struct{}

	mu    sync.Mutex
	frame *frame
}

func newHub(s *Server) *hub {
	return &hub{s: s, subs: map[*subscriber]struct{}{}, failing: map[string]bool{}}
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

// subscribe adds a stream and starts the poll loop if it was not running.
// It returns the samples so far, for the stream's first "series" event.
func (h *hub) subscribe(sub *subscriber) []sample {
	sub.notify = make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[sub] = struct{}{}
	if l := h.last; l != nil {
		if _, ok := l.views[sub.room]; ok || sub.room == "" {
			sub.put(l)
		}
	}
	if !h.running {
		h.running = true
		go h.run()
	}
	return append([]sample(nil), h.series...)
}

func (h *hub) unsubscribe(sub *subscriber) {
	h.mu.Lock()
	delete(h.subs, sub)
	h.mu.Unlock()
}

// wanted returns the rooms the open streams show and whether one wants the
// room list; ok is false when no stream is open, and the loop then stops.
func (h *hub) wanted() (rooms map[string]bool, list, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		h.running = false
		h.last = nil
		return nil, false, false
	}
	rooms = map[string]bool{}
	for sub := range h.subs {
		if sub.room != "" {
			rooms[sub.room] = true
		}
		list = list || sub.rooms
	}
	return rooms, list, true
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
		want, list, ok := h.wanted()
		if !ok {
			return
		}
		f := &frame{views: make(map[string]roomRead, len(want))}
		if list && (rooms == nil || time.Since(roomsRead) >= roomsEvery) {
			if b, err := h.readRooms(ctx); err == nil {
				rooms, roomsRead = b, time.Now()
			}
		}
		if list {
			f.rooms = rooms
		}
		for room := range want {
			v, err := h.s.opt.Source.RoomView(ctx, room)
			f.views[room] = roomRead{v, err}
			h.noteFailure(ctx, room, err)
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

// readRooms reads the room list as the rooms event's data.
func (h *hub) readRooms(ctx context.Context) ([]byte, error) {
	rooms, err := h.s.opt.Source.Rooms(ctx, h.s.opt.MaxRooms)
	if err != nil {
		if ctx.Err() == nil {
			h.s.lg.Warn("event stream: read rooms failed", zap.Error(err))
		}
		return nil, err
	}
	return mustJSON(toSummaries(rooms)), nil
}

// unavailableJSON is the data of an "unavailable" event: a problem naming
// the class of the failure, never the Redis error's text.
func unavailableJSON() []byte {
	return problem.Marshal(problem.New(503, problem.RedisUnavailable, "the room could not be read from Redis"), nil)
}
