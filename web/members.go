package web

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/problem"
)

// The member routes (docs/DESIGN.md §14): one member on many boards, a page
// of members on one board, and one member's hints. Each reads Redis through
// board.Store.Standings: one script call per hash slot, one round trip.

func (s *Server) registerMembers() {
	s.mux.HandleFunc("GET /v1/members/{id}", s.member)
	s.mux.HandleFunc("GET /v1/members/{id}/hints", s.memberHints)
	s.mux.HandleFunc("GET /v1/boards/{name}/members", s.boardMembers)
}

// MaxListBytes bounds the text of a comma-separated list parameter (ids=,
// boards=): MaxMembers ids of 128 bytes and their commas.
const MaxListBytes = board.MaxMembers * 129

// maxBoardsParam bounds the names of boards= (a list longer than the
// boards configured names one twice or one unknown, and is refused anyway).
const maxBoardsParam = 1000

// standingJSON is a member's standing in one ranking. rank 0 and total 0:
// not ranked there.
type standingJSON struct {
	Rank      int64       `json:"rank"`
	Total     json.Number `json:"total"`
	ReachedAt int64       `json:"reached_at"`
}

// memberBoardJSON is a member's standing on one board: periodic boards
// carry the current period, rolling and windows boards one standing per
// window instead of one.
type memberBoardJSON struct {
	Period    string                  `json:"period,omitempty"`
	Rank      *int64                  `json:"rank,omitempty"`
	Total     json.Number             `json:"total,omitempty"`
	ReachedAt *int64                  `json:"reached_at,omitempty"`
	Windows   map[string]standingJSON `json:"windows,omitempty"`
}

type memberStandingsJSON struct {
	Member string                     `json:"member"`
	Boards map[string]memberBoardJSON `json:"boards"`
}

type boardMembersJSON struct {
	Board   string           `json:"board"`
	Period  string           `json:"period"`
	Window  string           `json:"window"`
	Members []boardEntryJSON `json:"members"`
}

type hintJSON struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type hintsJSON struct {
	Member string     `json:"member"`
	Hints  []hintJSON `json:"hints"`
}

// listParam parses a comma-separated list parameter: 1 to max items, none
// empty, none twice, at most MaxListBytes of text. It answers 400 naming
// the parameter otherwise.
func listParam(w http.ResponseWriter, v, name string, max int) ([]string, bool) {
	bad := func(format string, a ...any) ([]string, bool) {
		writeJSON(w, http.StatusBadRequest, errorJSON{name + ": " + fmt.Sprintf(format, a...)})
		return nil, false
	}
	if len(v) > MaxListBytes {
		return bad("%d bytes, at most %d", len(v), MaxListBytes)
	}
	if v == "" {
		return bad("at least one is required (a comma-separated list)")
	}
	items := strings.Split(v, ",")
	if len(items) > max {
		return bad("%d given, at most %d", len(items), max)
	}
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if it == "" {
			return bad("an empty item in %q", v)
		}
		if seen[it] {
			return bad("%q is listed twice", it)
		}
		seen[it] = true
	}
	return items, true
}

// member answers GET /v1/members/{id}?boards=a,b: the member's standing on
// each board (default: every board that ranks user ids).
func (s *Server) member(w http.ResponseWriter, r *http.Request) {
	if !s.haveBoards(w) {
		return
	}
	boards := s.opt.Boards.UserBoards()
	if q := r.URL.Query(); q.Has("boards") {
		var ok bool
		if boards, ok = listParam(w, q.Get("boards"), "boards", maxBoardsParam); !ok {
			return
		}
	}
	id := r.PathValue("id")
	if !s.validMember(w, id) {
		return
	}
	out := memberStandingsJSON{Member: id, Boards: map[string]memberBoardJSON{}}
	if len(boards) == 0 { // no board ranks users: nothing to read
		writeJSON(w, http.StatusOK, out)
		return
	}
	ms, err := s.opt.Boards.Standings(r.Context(), boards, []string{id})
	if err != nil {
		s.boardFail(w, r, err)
		return
	}
	for _, b := range ms[0].Boards {
		out.Boards[b.Board] = s.memberBoardJSON(b)
	}
	writeJSON(w, http.StatusOK, out)
}

// validMember answers 400 when id cannot be a member, before anything is
// read. The answer does not echo the id: it may be thousands of bytes.
func (s *Server) validMember(w http.ResponseWriter, id string) bool {
	if err := codec.CheckID(id); err != nil {
		writeJSON(w, http.StatusBadRequest, errorJSON{fmt.Sprintf("%v: member: %v", boarddef.ErrBadParam, err)})
		return false
	}
	return true
}

// validMembers answers 400 when one of ids cannot be a member, naming its
// place in the list, not the id.
func (s *Server) validMembers(w http.ResponseWriter, ids []string) bool {
	for i, id := range ids {
		if err := codec.CheckID(id); err != nil {
			writeJSON(w, http.StatusBadRequest, errorJSON{fmt.Sprintf("%v: ids: item %d: %v", boarddef.ErrBadParam, i+1, err)})
			return false
		}
	}
	return true
}

func (s *Server) memberBoardJSON(b board.Standings) memberBoardJSON {
	def, _ := s.opt.Boards.Board(b.Board)
	kind := boarddef.Periodic
	if def != nil {
		kind = def.Kind()
	}
	out := memberBoardJSON{Period: b.Period}
	if kind == boarddef.Rolling || kind == boarddef.Windows {
		out.Windows = make(map[string]standingJSON, len(b.Standings))
		for _, st := range b.Standings {
			out.Windows[st.Window] = s.standingJSON(b.Board, st)
		}
		return out
	}
	st := s.standingJSON(b.Board, b.Standings[0])
	out.Rank, out.Total, out.ReachedAt = &st.Rank, st.Total, &st.ReachedAt
	return out
}

func (s *Server) standingJSON(name string, st board.Standing) standingJSON {
	e := s.entryJSON(name, board.Entry{Rank: st.Rank, Total: st.Total, ReachedAt: st.ReachedAt})
	return standingJSON{Rank: e.Rank, Total: e.Total, ReachedAt: e.ReachedAt}
}

// boardMembers answers GET /v1/boards/{name}/members?ids=a,b[&window=W]:
// a page of chosen members (friends) on one board, in the current period or
// window W (default: the first), ranked members first in rank order, then
// the members not ranked there (rank 0, total 0) in the order asked.
func (s *Server) boardMembers(w http.ResponseWriter, r *http.Request) {
	if !s.haveBoards(w) {
		return
	}
	q := r.URL.Query()
	ids, ok := listParam(w, q.Get("ids"), "ids", board.MaxMembers)
	if !ok || !s.validMembers(w, ids) {
		return
	}
	name := r.PathValue("name")
	def, found := s.opt.Boards.Board(name)
	if !found {
		s.boardFail(w, r, fmt.Errorf("%w: %q", boarddef.ErrUnknownBoard, name))
		return
	}
	if len(def.Windows()) == 0 && q.Get("window") != "" {
		s.boardFail(w, r, fmt.Errorf("%w: board %s is %s and has no windows", boarddef.ErrBadParam, name, def.Kind()))
		return
	}
	j, found := def.Window(q.Get("window"))
	if !found {
		s.boardFail(w, r, fmt.Errorf("%w: board %s has windows %s, not %q", boarddef.ErrUnknownWindow, name, strings.Join(def.Windows(), ", "), q.Get("window")))
		return
	}
	ms, err := s.opt.Boards.Standings(r.Context(), []string{name}, ids)
	if err != nil {
		s.boardFail(w, r, err)
		return
	}
	out := boardMembersJSON{Board: name, Period: ms[0].Boards[0].Period, Members: make([]boardEntryJSON, 0, len(ms))}
	if ws := def.Windows(); len(ws) > 0 {
		out.Window = ws[j]
	}
	for _, m := range ms {
		st := m.Boards[0].Standings[j]
		out.Members = append(out.Members, s.entryJSON(name, board.Entry{Member: m.Member, Rank: st.Rank, Total: st.Total, ReachedAt: st.ReachedAt}))
	}
	// Ranked first by rank; the stable sort keeps the unranked in the order asked.
	slices.SortStableFunc(out.Members, func(a, b boardEntryJSON) int {
		if (a.Rank == 0) != (b.Rank == 0) {
			if a.Rank == 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Rank, b.Rank)
	})
	writeJSON(w, http.StatusOK, out)
}

// memberHints answers GET /v1/members/{id}/hints: the texts of the hint
// rules that hold for the member, in order (docs/DESIGN.md §8 "Hints").
func (s *Server) memberHints(w http.ResponseWriter, r *http.Request) {
	if s.opt.Hints == nil {
		problem.Write(w, http.StatusNotFound, problem.NotFound, "no hints are configured", nil)
		return
	}
	if !s.haveBoards(w) {
		return
	}
	id := r.PathValue("id")
	if !s.validMember(w, id) {
		return
	}
	var ms board.MemberStandings
	if boards := s.opt.Hints.Boards(); len(boards) > 0 {
		got, err := s.opt.Boards.Standings(r.Context(), boards, []string{id})
		if err != nil {
			s.boardFail(w, r, err)
			return
		}
		ms = got[0]
	}
	hs, errs := s.opt.Hints.Eval(ms)
	for _, err := range errs {
		s.lg.Warn("hint rule failed", zap.String("member", id), zap.Error(err))
	}
	out := hintsJSON{Member: id, Hints: make([]hintJSON, len(hs))}
	for i, h := range hs {
		out.Hints[i] = hintJSON{Name: h.Name, Text: h.Text}
	}
	writeJSON(w, http.StatusOK, out)
}
