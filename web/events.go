package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/rostrumhq/rostrum/internal/httpserve"
	"github.com/rostrumhq/rostrum/internal/problem"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/stability"
)

// countersJSON is the "counters" event. The rates are null until the
// hub has two samples to compare (and after a counter went backwards, as
// when the processor restarted).
type countersJSON struct {
	At               int64            `json:"at"` // Unix ms of the sample
	Records          int64            `json:"records"`
	Events           int64            `json:"events"`
	DLQ              int64            `json:"dlq"`
	Ignored          int64            `json:"ignored"`
	Published        int64            `json:"published"`
	LagRecords       int64            `json:"lag_records"`
	LagSeconds       float64          `json:"lag_seconds"`
	EventsPerSecond  *float64         `json:"events_per_second"`
	RecordsPerSecond *float64         `json:"records_per_second"`
	DLQPerSecond     *float64         `json:"dlq_per_second"`
	DLQByReason      map[string]int64 `json:"dlq_by_reason"` // since start, by reason class
	Partitions       []partitionJSON  `json:"partitions"`    // per input partition, as last measured
}

type partitionJSON struct {
	Topic      string  `json:"topic"`
	Partition  int32   `json:"partition"`
	LagRecords int64   `json:"lag_records"`
	LagSeconds float64 `json:"lag_seconds"`
}

// seriesJSON is the "series" event, the first of a stream with counters: the
// hub's recent samples, oldest first, so the sparklines start full.
type seriesJSON struct {
	IntervalMS int64    `json:"interval_ms"`
	Points     []sample `json:"points"`
}

// countersEvent returns the counters event for c sampled at now, with the
// rates since prev (sampled at prevTime, when sampled), and its sample.
func countersEvent(c, prev Counters, prevTime time.Time, sampled bool, now time.Time) ([]byte, sample) {
	out := countersJSON{At: now.UnixMilli(), Records: c.Records, Events: c.Events, DLQ: c.DLQ, Ignored: c.Ignored,
		Published: c.Published, LagRecords: c.LagRecords, LagSeconds: c.LagSeconds,
		DLQByReason: c.DLQByReason, Partitions: make([]partitionJSON, len(c.Partitions))}
	if out.DLQByReason == nil {
		out.DLQByReason = map[string]int64{}
	}
	for i, p := range c.Partitions {
		out.Partitions[i] = partitionJSON{Topic: p.Topic, Partition: p.Partition, LagRecords: p.Records, LagSeconds: p.Seconds}
	}
	if sampled {
		elapsed := now.Sub(prevTime)
		out.EventsPerSecond = rate(prev.Events, c.Events, elapsed)
		out.RecordsPerSecond = rate(prev.Records, c.Records, elapsed)
		out.DLQPerSecond = rate(prev.DLQ, c.DLQ, elapsed)
	}
	return mustJSON(out), sample{At: out.At, EventsPerSecond: out.EventsPerSecond, DLQPerSecond: out.DLQPerSecond,
		LagRecords: c.LagRecords, LagSeconds: c.LagSeconds}
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

	merge []string // the merge of the raw lists read so far (stability.Merge)
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

// streamRetryAfter is the Retry-After of a refused stream, in seconds.
const streamRetryAfter = "5"

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	room := q.Get("room")
	if room != "" && !validRoomID(room) {
		badRoomID(w)
		return
	}
	wantRooms, err := boolParam(q.Get("rooms"))
	if err != nil {
		problem.Write(w, http.StatusBadRequest, problem.BadRequest, "rooms must be true or false", nil)
		return
	}
	sub := &subscriber{room: room, rooms: wantRooms, client: clientKey(r)}
	series, no := s.hub.subscribe(sub)
	if no != nil {
		w.Header().Set("Retry-After", streamRetryAfter)
		problem.Write(w, no.status, problem.CodeFor(no.status), no.detail, nil)
		return
	}
	defer s.hub.unsubscribe(sub)
	httpserve.LiftWriteDeadline(w) // a stream lives as long as its client
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, "retry: 2000\n\n"); err != nil {
		return
	}
	st := &stream{w: w, last: make(map[string][]byte)}
	if s.opt.Counters != nil {
		if series == nil {
			series = []sample{}
		}
		if _, err := st.send("series", "series", mustJSON(seriesJSON{IntervalMS: s.opt.Interval.Milliseconds(), Points: series})); err != nil {
			return
		}
	}
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		case <-sub.notify:
		}
		f := sub.take()
		if f == nil {
			continue
		}
		sent := false
		if room != "" {
			read, ok := f.views[room]
			if !ok {
				continue // a poll from before this stream's room was read
			}
			event, data := st.roomEvent(read, s.opt.Stability, s.opt.TopN)
			ok, err := st.send(event, "room", data)
			if err != nil {
				return
			}
			sent = sent || ok
		}
		if f.rooms != nil && wantRooms {
			ok, err := st.send("rooms", "rooms", f.rooms)
			if err != nil {
				return
			}
			sent = sent || ok
		}
		if f.counters != nil {
			ok, err := st.send("counters", "counters", f.counters)
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
	}
}

// roomEvent returns the event to send for a room's read: "room" with the
// room's JSON, "missing" for a room with no state, or "unavailable" when the
// read failed.
//
// The room's JSON also carries the merge of the raw lists this stream
// has read, so the page can switch between what the processor publishes
// and what seed 003's merge would show, both from the same raw top-N. The
// hub reads the raw list once per interval, less often than the processor
// merges, which if anything hides some of the merge's flicker: the
// comparison favours it.
func (st *stream) roomEvent(read roomRead, strategy string, topN int) (string, []byte) {
	v, err := read.view, read.err
	switch {
	case errors.Is(err, ranking.ErrUnknownRoom):
		st.merge = nil
		return "missing", problem.Marshal(problem.New(http.StatusNotFound, problem.NotFound, "unknown room"), nil)
	case err != nil:
		return "unavailable", unavailableJSON()
	}
	ids := make([]string, len(v.Raw))
	for i, m := range v.Raw {
		ids[i] = m.UserID
	}
	st.merge = stability.Merge(nil, st.merge, ids, topN)
	j := toRoomJSON(v)
	j.Strategy = strategy
	j.Merge = make([]memberJSON, len(st.merge))
	for i, id := range st.merge {
		j.Merge[i] = j.Raw[slices.IndexFunc(j.Raw, func(m memberJSON) bool { return m.UserID == id })]
	}
	return "room", mustJSON(j)
}

// boolParam parses an optional boolean query parameter ("", "0", "1",
// "false", "true").
func boolParam(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	return strconv.ParseBool(v)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // only our own types are written
		panic(err)
	}
	return b
}
