package web

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/ranking"
)

// roomJSON is a room on the wire (GET /v1/rooms/{room}/top and the "room"
// event). Member fields use the names of the output records.
type roomJSON struct {
	RoomID  string       `json:"room_id"`
	Seq     int64        `json:"seq"`
	Members int          `json:"members"` // ranked members
	Stable  []memberJSON `json:"stable"`  // slot order
	Raw     []memberJSON `json:"raw"`     // best first
	// Event stream only: the processor's strategy (which made Stable), and
	// seed 003's merge of the raw lists this stream has read, in slot order,
	// so the page can show both.
	Strategy string       `json:"strategy,omitempty"`
	Seed     []memberJSON `json:"seed,omitempty"`
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

type roomSummaryJSON struct {
	RoomID  string `json:"room_id"`
	Seq     int64  `json:"seq"`
	Members int64  `json:"members"`
}

type errorJSON struct {
	Error string `json:"error"`
}

func toRoomJSON(v ranking.RoomView) roomJSON {
	return roomJSON{RoomID: v.Room, Seq: v.Seq, Members: v.Members, Stable: toMembers(v.Stable), Raw: toMembers(v.Raw)}
}

func toMembers(ms []ranking.MemberView) []memberJSON {
	out := make([]memberJSON, len(ms)) // never null on the wire
	for i, m := range ms {
		out[i] = memberJSON{UserID: m.UserID, Audio: m.Audio, Volume: m.Volume, Video: m.Video, Role: m.Role,
			ScreenShare: m.ScreenShare, Spotlight: m.Spotlight, Score: m.Score, TS: m.TS}
	}
	return out
}

func (s *Server) rooms(w http.ResponseWriter, r *http.Request) {
	rooms, err := s.opt.Source.Rooms(r.Context(), s.opt.MaxRooms)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]roomSummaryJSON, len(rooms))
	for i, rm := range rooms {
		out[i] = roomSummaryJSON{RoomID: rm.Room, Seq: rm.Seq, Members: rm.Members}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) roomTop(w http.ResponseWriter, r *http.Request) {
	room := r.PathValue("room")
	if !validRoomID(room) {
		writeJSON(w, http.StatusBadRequest, errorJSON{"room id must be 1-128 bytes of [A-Za-z0-9._:@-]"})
		return
	}
	v, err := s.opt.Source.RoomView(r.Context(), room)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toRoomJSON(v))
}

// fail answers a Source error: 404 for an unknown room, else 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ranking.ErrUnknownRoom) {
		writeJSON(w, http.StatusNotFound, errorJSON{"unknown room"})
		return
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	s.lg.Warn("http read failed", zap.String("path", r.URL.Path), zap.Error(err))
	writeJSON(w, http.StatusInternalServerError, errorJSON{err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b := mustJSON(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
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
