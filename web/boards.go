package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
)

// Boards is what the leaderboard routes read. *board.Store implements it.
type Boards interface {
	Boards(now time.Time) []board.Info
	Top(ctx context.Context, board, period, window string, offset, n int) (board.Page, error)
	Member(ctx context.Context, board, member, period, window string) (board.Entry, error)
	Around(ctx context.Context, board, member string, n int, period, window string) (board.Page, error)
	Settled(ctx context.Context, board, period string, offset, n int) (board.SettledPage, error)
	SettledPeriods(ctx context.Context, board string) ([]string, error)
	// Board returns a board's definition (its scale formats totals).
	Board(name string) (*boarddef.Board, bool)
	// Standings and UserBoards serve the member routes (members.go).
	Standings(ctx context.Context, boards, members []string) ([]board.MemberStandings, error)
	UserBoards() []string
}

var _ Boards = (*board.Store)(nil)

type boardInfoJSON struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	Period    string   `json:"period"`     // current period (periodic boards), else ""
	NextReset int64    `json:"next_reset"` // Unix ms; 0 for a total board (never)
	Windows   []string `json:"windows,omitempty"`
	Settles   bool     `json:"settles"`             // closed periods are settled (GET …/settled)
	HalfLife  string   `json:"half_life,omitempty"` // decay boards: "7d", "36h"
}

// boardEntryJSON is one ranked member. total is a JSON number written
// exactly from the stored integer: on a board with scale 10, 100 or 1000 it
// carries up to 1, 2 or 3 decimal places (12.5), never rounded through a
// float.
type boardEntryJSON struct {
	Member    string      `json:"member"`
	Rank      int64       `json:"rank"`
	Total     json.Number `json:"total"`
	ReachedAt int64       `json:"reached_at"`
}

// entryJSON formats e of board name.
func (s *Server) entryJSON(name string, e board.Entry) boardEntryJSON {
	total := strconv.FormatInt(e.Total, 10)
	if b, ok := s.opt.Boards.Board(name); ok {
		total = b.FormatUnits(e.Total)
	}
	return boardEntryJSON{Member: e.Member, Rank: e.Rank, Total: json.Number(total), ReachedAt: e.ReachedAt}
}

type boardPageJSON struct {
	Board        string           `json:"board"`
	Period       string           `json:"period"`
	Window       string           `json:"window"`
	TotalMembers int64            `json:"total_members"`
	Members      []boardEntryJSON `json:"members"`
}

func (s *Server) registerBoards() {
	s.mux.HandleFunc("GET /v1/boards", s.boardList)
	s.mux.HandleFunc("GET /v1/boards/{name}/top", s.boardTop)
	s.mux.HandleFunc("GET /v1/boards/{name}/members/{member}", s.boardMember)
	s.mux.HandleFunc("GET /v1/boards/{name}/members/{member}/around", s.boardAround)
	s.mux.HandleFunc("GET /v1/boards/{name}/settled", s.boardSettled)
	s.mux.HandleFunc("POST /v1/boards/{name}/members/{member}/remove", s.boardRemove) // remove.go
}

// settledJSON is a page of a settled period's snapshot, with the labels of
// the board's settled periods still kept (newest first).
type settledJSON struct {
	Board        string           `json:"board"`
	Period       string           `json:"period"`
	ClosedAt     int64            `json:"closed_at"`     // Unix ms: the period's end + grace
	TotalMembers int64            `json:"total_members"` // members ranked when it was frozen
	Members      []boardEntryJSON `json:"members"`
	Periods      []string         `json:"periods"`
}

func (s *Server) boardSettled(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, ok1 := intParam(w, q.Get("n"), "n", 10)
	offset, ok2 := intParam(w, q.Get("offset"), "offset", 0)
	if !ok1 || !ok2 || !s.haveBoards(w) {
		return
	}
	name := r.PathValue("name")
	p, err := s.opt.Boards.Settled(r.Context(), name, q.Get("period"), offset, n)
	if err != nil {
		s.boardFail(w, r, err)
		return
	}
	periods, err := s.opt.Boards.SettledPeriods(r.Context(), name)
	if err != nil {
		s.boardFail(w, r, err)
		return
	}
	out := settledJSON{Board: p.Board, Period: p.Period, ClosedAt: p.ClosedAt, TotalMembers: p.Members,
		Members: make([]boardEntryJSON, len(p.Top)), Periods: periods}
	for i, e := range p.Top {
		out.Members[i] = s.entryJSON(name, e)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) boardList(w http.ResponseWriter, r *http.Request) {
	out := []boardInfoJSON{}
	if s.opt.Boards != nil {
		for _, b := range s.opt.Boards.Boards(time.Now()) {
			var next int64 // 0: never (total boards)
			if !b.NextReset.IsZero() {
				next = b.NextReset.UnixMilli()
			}
			out = append(out, boardInfoJSON{Name: b.Name, Kind: b.Kind.String(), Period: b.Period,
				NextReset: next, Windows: b.Windows, Settles: b.Settles, HalfLife: b.HalfLife})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) boardTop(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, ok1 := intParam(w, q.Get("n"), "n", 10)
	offset, ok2 := intParam(w, q.Get("offset"), "offset", 0)
	if !ok1 || !ok2 || !s.haveBoards(w) {
		return
	}
	p, err := s.opt.Boards.Top(r.Context(), r.PathValue("name"), q.Get("period"), q.Get("window"), offset, n)
	if err != nil {
		s.boardFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.toPageJSON(p))
}

func (s *Server) boardMember(w http.ResponseWriter, r *http.Request) {
	if !s.haveBoards(w) || !s.validMember(w, r.PathValue("member")) {
		return
	}
	q := r.URL.Query()
	e, err := s.opt.Boards.Member(r.Context(), r.PathValue("name"), r.PathValue("member"), q.Get("period"), q.Get("window"))
	if err != nil {
		s.boardFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.entryJSON(r.PathValue("name"), e))
}

func (s *Server) boardAround(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, ok := intParam(w, q.Get("n"), "n", 5)
	if !ok || !s.haveBoards(w) || !s.validMember(w, r.PathValue("member")) {
		return
	}
	p, err := s.opt.Boards.Around(r.Context(), r.PathValue("name"), r.PathValue("member"), n, q.Get("period"), q.Get("window"))
	if err != nil {
		s.boardFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.toPageJSON(p))
}

// haveBoards answers 404 when the server has no boards configured.
func (s *Server) haveBoards(w http.ResponseWriter) bool {
	if s.opt.Boards == nil {
		writeJSON(w, http.StatusNotFound, errorJSON{"unknown board: no boards are configured"})
		return false
	}
	return true
}

func (s *Server) toPageJSON(p board.Page) boardPageJSON {
	out := boardPageJSON{Board: p.Board, Period: p.Period, Window: p.Window, TotalMembers: p.TotalMembers,
		Members: make([]boardEntryJSON, len(p.Members))}
	for i, e := range p.Members {
		out.Members[i] = s.entryJSON(p.Board, e)
	}
	return out
}

// intParam parses an optional integer query parameter, answering 400 when
// it is malformed.
func intParam(w http.ResponseWriter, v, name string, def int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorJSON{name + " must be an integer, got " + strconv.Quote(v)})
		return 0, false
	}
	return n, true
}

// boardFail answers a board read error: 400 for a bad parameter, 404 for an
// unknown board, period, window or member, else 500.
func (s *Server) boardFail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, boarddef.ErrBadParam):
		writeJSON(w, http.StatusBadRequest, errorJSON{err.Error()})
	case errors.Is(err, boarddef.ErrUnknownBoard), errors.Is(err, boarddef.ErrUnknownPeriod),
		errors.Is(err, boarddef.ErrUnknownWindow), errors.Is(err, boarddef.ErrUnknownMember):
		writeJSON(w, http.StatusNotFound, errorJSON{err.Error()})
	default:
		s.fail(w, r, err)
	}
}
