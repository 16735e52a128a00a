package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
)

// countersJSON is the "counters" event. The rates are null until the
// stream has two samples to compare (and after a counter went backwards, as
// when the processor restarted).
type countersJSON struct {
	Records          int64    `json:"records"`
	Events           int64    `json:"events"`
	DLQ              int64    `json:"dlq"`
	Ignored          int64    `json:"ignored"`
	Published        int64    `json:"published"`
	LagRecords       int64    `json:"lag_records"`
	LagSeconds       float64  `json:"lag_seconds"`
	EventsPerSecond  *float64 `json:"events_per_second"`
	RecordsPerSecond *float64 `json:"records_per_second"`
}

// rate is the change from prev to cur per second, or nil when it cannot be
// told.
func rate(prev, cur int64, elapsed time.Duration) *float64 {
	if elapsed <= 0 || cur < prev {
		return nil
	}
	r := float64(cur-prev) / elapsed.Seconds()
	return &r
}

// stream is the state of one open event stream.
type stream struct {
	w    io.Writer
	last map[string][]byte // event name → last data sent

	prev     Counters
	prevTime time.Time
	sampled  bool

	seed []string // seed merge of the raw lists read so far (stability.Merge)
}

// send writes the event unless its data equals what was last sent under
// that name (or under "room"/"missing" for the room's two states). It
// reports whether it wrote.
func (st *stream) send(event, key string, data []byte) (bool, error) {
	if bytes.Equal(st.last[key], data) {
		return false, nil
	}
	st.last[key] = data
	var b bytes.Buffer
	b.Grow(len(event) + len(data) + 16)
	b.WriteString("event: ")
	b.WriteString(event)
	b.WriteString("\ndata: ")
	b.Write(data) // json.Marshal output holds no newline
	b.WriteString("\n\n")
	_, err := st.w.Write(b.Bytes())
	return true, err
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	room := r.URL.Query().Get("room")
	if room != "" && !validRoomID(room) {
		writeJSON(w, http.StatusBadRequest, errorJSON{"room id must be 1-128 bytes of [A-Za-z0-9._:@-]"})
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, "retry: 2000\n\n"); err != nil {
		return
	}
	ctx := r.Context()
	st := &stream{w: w, last: make(map[string][]byte)}
	failing := false // log a failing Source once per stream, not per poll
	t := time.NewTicker(s.opt.Interval)
	defer t.Stop()
	for {
		sent := false
		if room != "" {
			event, data, err := s.roomEvent(r, room, st)
			if err != nil && !failing && ctx.Err() == nil {
				s.lg.Warn("event stream: read room failed", zap.String("room", room), zap.Error(err))
			}
			failing = err != nil
			ok, werr := st.send(event, "room", data)
			if werr != nil {
				return
			}
			sent = sent || ok
		}
		if s.opt.Counters != nil {
			ok, err := st.send("counters", "counters", st.counters(s.opt.Counters(), time.Now()))
			if err != nil {
				return
			}
			sent = sent || ok
		}
		if !sent {
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// roomEvent reads the room and returns the event to send: "room" with the
// room's JSON, "missing" for a room with no state, or "unavailable" when the
// read failed (the error is returned as well).
//
// The room's JSON also carries the seed merge of the raw lists this stream
// has read, so the page can switch between what the processor publishes
// and what seed 003's merge would show, both from the same raw top-N. The
// stream reads the raw list once per interval, less often than the
// processor merges, which if anything hides some of the seed merge's
// flicker: the comparison favours it.
func (s *Server) roomEvent(r *http.Request, room string, st *stream) (string, []byte, error) {
	v, err := s.opt.Source.RoomView(r.Context(), room)
	switch {
	case errors.Is(err, ranking.ErrUnknownRoom):
		st.seed = nil
		return "missing", mustJSON(errorJSON{"unknown room"}), nil
	case err != nil:
		return "unavailable", mustJSON(errorJSON{err.Error()}), err
	}
	ids := make([]string, len(v.Raw))
	for i, m := range v.Raw {
		ids[i] = m.UserID
	}
	st.seed = stability.Merge(nil, st.seed, ids, s.opt.TopN)
	j := toRoomJSON(v)
	j.Strategy = s.opt.Stability
	j.Seed = make([]memberJSON, len(st.seed))
	for i, id := range st.seed {
		j.Seed[i] = j.Raw[slices.IndexFunc(j.Raw, func(m memberJSON) bool { return m.UserID == id })]
	}
	return "room", mustJSON(j), nil
}

// counters returns the counters event for c sampled at now, with the rates
// since the previous sample.
func (st *stream) counters(c Counters, now time.Time) []byte {
	out := countersJSON{Records: c.Records, Events: c.Events, DLQ: c.DLQ, Ignored: c.Ignored, Published: c.Published,
		LagRecords: c.LagRecords, LagSeconds: c.LagSeconds}
	if st.sampled {
		elapsed := now.Sub(st.prevTime)
		out.EventsPerSecond = rate(st.prev.Events, c.Events, elapsed)
		out.RecordsPerSecond = rate(st.prev.Records, c.Records, elapsed)
	}
	st.prev, st.prevTime, st.sampled = c, now, true
	return mustJSON(out)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // only our own types are written
		panic(err)
	}
	return b
}
