package web

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/internal/problem"
	"github.com/rostrumhq/rostrum/ranking"
)

// roomJSON is a room on the wire (GET /v1/rooms/{room}/top and the "room"
// event). Member fields use the names of the output records.
type roomJSON struct {
	RoomID       string       `json:"room_id"`
	Seq          int64        `json:"seq"`
	TotalMembers int          `json:"total_members"` // ranked members
	Stable       []memberJSON `json:"stable"`        // slot order
	Raw          []memberJSON `json:"raw"`           // best first
	// Event stream only: the processor's strategy (which made Stable), and
	// the merge (seed 003's, stability.Merge) of the raw lists this stream
	// has read, in slot order, so the page can show both.
	Strategy string       `json:"strategy,omitempty"`
	Merge    []memberJSON `json:"merge,omitempty"`
}

type memberJSON struct {
	UserID string `json:"user_id"`
	Audio  uint8  `json:"audio"`
	Volume uint16 `json:"volume"`
	Video  uint8  `json:"video"`
	Role   string `json:"role"`
	// ScreenShare and Spotlight are 0 or 1.
	ScreenShare uint8   `json:"screen_share"`
	Spotlight   uint8   `json:"spotlight"`
	Score       float64 `json:"score"` // an integer below 2^53: exact in JSON and JavaScript
	TS          int64   `json:"ts"`
}

// roomSummaryJSON is a room of GET /v1/rooms and of the "rooms" event.
type roomSummaryJSON struct {
	RoomID       string `json:"room_id"`
	Seq          int64  `json:"seq"`
	TotalMembers int64  `json:"total_members"` // ranked members
}

// roomsPageJSON is GET /v1/rooms.
type roomsPageJSON struct {
	Rooms      []roomSummaryJSON `json:"rooms"`
	Offset     int               `json:"offset"`
	Limit      int               `json:"limit"`
	NextOffset *int              `json:"next_offset,omitempty"` // absent on the last page
}

func toSummaries(rooms []ranking.RoomSummary) []roomSummaryJSON {
	out := make([]roomSummaryJSON, len(rooms))
	for i, rm := range rooms {
		out[i] = roomSummaryJSON{RoomID: rm.Room, Seq: rm.Seq, TotalMembers: rm.Members}
	}
	return out
}

func toRoomJSON(v ranking.RoomView) roomJSON {
	return roomJSON{RoomID: v.Room, Seq: v.Seq, TotalMembers: v.Members, Stable: toMembers(v.Stable), Raw: toMembers(v.Raw)}
}

func toMembers(ms []ranking.MemberView) []memberJSON {
	out := make([]memberJSON, len(ms)) // never null on the wire
	for i, m := range ms {
		out[i] = memberJSON{UserID: m.UserID, Audio: m.Audio, Volume: m.Volume, Video: m.Video, Role: m.Role,
			ScreenShare: m.ScreenShare, Spotlight: m.Spotlight, Score: m.Score, TS: m.TS}
	}
	return out
}

// maxRoomsScan bounds the rooms GET /v1/rooms reads for one answer.
const maxRoomsScan = 10000

// rooms serves GET /v1/rooms?limit=&offset=&q=: a page of the rooms, busiest
// first, optionally only those whose id contains q.
func (s *Server) rooms(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok1 := intParam(w, q.Get("limit"), "limit", 100)
	offset, ok2 := intParam(w, q.Get("offset"), "offset", 0)
	if !ok1 || !ok2 {
		return
	}
	if limit < 1 || limit > 1000 || offset < 0 || offset+limit >= maxRoomsScan {
		problem.Write(w, http.StatusBadRequest, problem.BadRequest,
			"limit must be 1-1000 and offset at least 0, with offset+limit below 10000", nil)
		return
	}
	search := q.Get("q")
	want := offset + limit + 1 // one more: is there a next page?
	if search != "" {
		want = maxRoomsScan
	}
	rooms, err := s.opt.Source.Rooms(r.Context(), want)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if search != "" {
		rooms = slices.DeleteFunc(rooms, func(rm ranking.RoomSummary) bool { return !strings.Contains(rm.Room, search) })
	}
	page := roomsPageJSON{Rooms: []roomSummaryJSON{}, Offset: offset, Limit: limit}
	if offset < len(rooms) {
		end := min(len(rooms), offset+limit)
		page.Rooms = toSummaries(rooms[offset:end])
		if end < len(rooms) {
			page.NextOffset = &end
		}
	}
	writeJSON(w, http.StatusOK, page)
}

// badRoomID answers 400 for a malformed room id.
func badRoomID(w http.ResponseWriter) {
	problem.Write(w, http.StatusBadRequest, problem.BadRequest, "room id must be 1-128 bytes of [A-Za-z0-9._:@-]", nil)
}

func (s *Server) roomTop(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	if !validRoomID(room) {
		badRoomID(w)
		return
	}
	v, err := s.opt.Source.RoomView(r.Context(), room)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toRoomJSON(v))
}

// fail answers a Source error: 404 for an unknown room, else 503
// redis-unavailable. The error's text is logged, never sent.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ranking.ErrUnknownRoom) {
		problem.Write(w, http.StatusNotFound, problem.NotFound, "unknown room", nil)
		return
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	s.lg.Warn("http read failed", zap.String("path", r.URL.Path), zap.Error(err))
	problem.Write(w, http.StatusServiceUnavailable, problem.RedisUnavailable, "the read from Redis failed; see the server's log", nil)
}

// errorJSON is an error answer's text; writeJSON writes it as a problem
// (RFC 9457) whose code follows from the status.
type errorJSON struct {
	Error string
}

// maxDetail bounds the detail of an error answer: a parameter it quotes
// (a period label, a window) is cut, not echoed whole.
const maxDetail = 300

// writeJSON writes v as the answer's JSON body with code. An errorJSON is
// written as a problem whose code follows from the status (problem.CodeFor),
// its text cut to maxDetail bytes.
func writeJSON(w http.ResponseWriter, code int, v any) {
	if e, ok := v.(errorJSON); ok {
		problem.Write(w, code, problem.CodeFor(code), cut(e.Error, maxDetail), nil)
		return
	}
	b := mustJSON(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// cut returns s cut to at most n bytes (on a rune boundary), marked with
// an ellipsis when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// validRoomID reports whether id is a valid room id: 1–128 bytes of
// [A-Za-z0-9._:@-], as the decoder accepts. It also keeps braces, which
// would break the hash tag of the Redis keys, out of every key.
func validRoomID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == ':', c == '@', c == '-':
		default:
			return false
		}
	}
	return true
}
