package board

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/redisscript"
)

// Reading many members on many boards at once (docs/DESIGN.md §8 "Member
// reads"): the standings of a set of members in the current period of each
// periodic board, in every window of each rolling or windows board, and in
// each total board, in one script call per Redis Cluster hash slot, all
// calls pipelined in one round trip.

// MaxMembers is the most members one Standings call reads.
const MaxMembers = 100

// membersLua reads the standings of several members in several rankings of
// one hash slot; lua/members.lua.
var membersLua = redisscript.MustParse(luaFiles, "lua/members.lua")

// Standing is a member's place in one ranking: a board's current period, a
// total board's ranking, or one window of a rolling or windows board.
type Standing struct {
	Window    string // rolling and windows boards: the window's name ("3m"); else ""
	Rank      int64  // 1-based, as Top ranks; 0 when the member is not ranked
	Total     int64  // units of 1/Scale (boarddef.Board.FormatUnits writes it), as Member reads it; 0 when not ranked
	ReachedAt int64  // Unix ms; 0 when not ranked
}

// Standings is one member's standings on one board.
type Standings struct {
	Board  string
	Period string // periodic boards: the current period's label; else ""
	// Standings holds one Standing for a periodic or total board, and one
	// per window, shortest first, for a rolling or windows board.
	Standings []Standing
}

// MemberStandings is one member's standings on every board asked for.
type MemberStandings struct {
	Member string
	Boards []Standings // in the order the boards were asked for
}

// UserBoards returns the names of the boards that rank user ids, in
// configuration order: the boards a member read covers by default.
func (s *Store) UserBoards() []string {
	var out []string
	for _, b := range s.boards {
		if b.RanksUsers() {
			out = append(out, b.Name())
		}
	}
	return out
}

// slotCall is the script call of one hash slot: the rankings read in it.
type slotCall struct {
	keys   []string
	counts []int // KEYS per ranking: 2 or 3
	reads  []rankingRead
}

// rankingRead is one ranking of a Standings call and where its standings go.
type rankingRead struct {
	t      target
	board  int // index into the boards asked for
	window int // index into that board's Standings
}

// Standings returns the standings of each member on each board: its rank
// and total in the current period of a periodic board, in the ranking of a
// total board (decay boards: the decayed value at the store's clock), and
// in every window of a rolling or windows board. A member that is not
// ranked somewhere gets Rank 0 and Total 0 there, never an error.
//
// It plans every ranking's keys with the key builder Top and Member use,
// groups the rankings by the Redis Cluster hash slot of their keys, and
// runs one members.lua call per slot, all pipelined together: one round
// trip on a single node, one per master (in parallel) on a cluster. Each
// call is atomic, so the rankings of one slot are read at one instant.
//
// Errors: ErrBadParam for no members or more than MaxMembers, a member that
// is not a valid id, a member or board listed twice, no boards;
// ErrUnknownBoard; a wrapped Redis error.
func (s *Store) Standings(ctx context.Context, boards, members []string) ([]MemberStandings, error) {
	if len(members) == 0 || len(members) > MaxMembers {
		return nil, fmt.Errorf("%w: %d members, must be between 1 and %d", boarddef.ErrBadParam, len(members), MaxMembers)
	}
	if len(boards) == 0 {
		return nil, fmt.Errorf("%w: no boards to read", boarddef.ErrBadParam)
	}
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if err := codec.CheckID(m); err != nil {
			return nil, fmt.Errorf("%w: member %q: %v", boarddef.ErrBadParam, m, err)
		}
		if seen[m] {
			return nil, fmt.Errorf("%w: member %q is listed twice", boarddef.ErrBadParam, m)
		}
		seen[m] = true
	}
	calls, template, err := s.planStandings(boards)
	if err != nil {
		return nil, err
	}
	now := s.now() // a decay board's values are read at the wall clock
	cmds, err := s.eval(ctx, membersLua, len(calls), func(k int) ([]string, []any) {
		a := membersArgs{members: members, keyCounts: calls[k].counts}
		return calls[k].keys, a.append(make([]any, 0, 1+len(members)+len(a.keyCounts)))
	})
	if err != nil {
		return nil, err
	}
	out := make([]MemberStandings, len(members))
	for i, m := range members {
		out[i] = MemberStandings{Member: m, Boards: make([]Standings, len(template))}
		for bi, bs := range template {
			out[i].Boards[bi] = Standings{Board: bs.Board, Period: bs.Period,
				Standings: append([]Standing(nil), bs.Standings...)}
		}
	}
	for k, c := range calls {
		vals, err := cmds[k].Slice()
		if err != nil || len(vals) != len(c.reads) {
			return nil, fmt.Errorf("board: members: unexpected reply %v (%v)", cmds[k].Val(), err)
		}
		for ri, rd := range c.reads {
			r, ok := vals[ri].([]any)
			if !ok || len(r) != 1+3*len(members) {
				return nil, fmt.Errorf("board %s: members: unexpected reply of %d values", rd.t.b.Name(), len(r))
			}
			bs, _ := r[0].(string)
			base, _ := strconv.ParseInt(bs, 10, 64)
			for i := range members {
				rank, _ := r[1+3*i].(int64)
				if rank < 0 {
					continue // not ranked: Rank and Total stay 0
				}
				st, _ := r[2+3*i].(string)
				sc, _ := r[3+3*i].(string)
				sp := &out[i].Boards[rd.board].Standings[rd.window]
				sp.Rank = rank + 1
				sp.Total, sp.ReachedAt = rd.t.standing(st, sc, base, now)
			}
		}
	}
	return out, nil
}

// planStandings returns the script calls that read boards, one per hash
// slot, in the order the slots first appear, and the standings of a member
// ranked nowhere (the boards' periods and windows filled in).
func (s *Store) planStandings(boards []string) ([]slotCall, []Standings, error) {
	bySlot := map[int]int{} // slot → index into calls
	var calls []slotCall
	template := make([]Standings, len(boards))
	seen := make(map[string]bool, len(boards))
	for bi, name := range boards {
		b, ok := s.byName[name]
		if !ok {
			return nil, nil, fmt.Errorf("%w: %q", boarddef.ErrUnknownBoard, name)
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("%w: board %s is listed twice", boarddef.ErrBadParam, name)
		}
		seen[name] = true
		windows := []string{""}
		if b.Kind() == boarddef.Rolling || b.Kind() == boarddef.Windows {
			windows = b.Windows()
		}
		template[bi] = Standings{Board: name, Standings: make([]Standing, len(windows))}
		for wi, w := range windows {
			t, err := s.target(name, "", w)
			if err != nil {
				return nil, nil, err
			}
			template[bi].Period = t.period
			template[bi].Standings[wi].Window = w
			keys := []string{t.zset, t.state}
			if t.base != "" {
				keys = append(keys, t.base)
			}
			slot := keySlot(keys[0])
			for _, k := range keys[1:] {
				if keySlot(k) != slot {
					// A script may only touch keys of one slot; the store
					// builds a ranking's keys under one hash tag.
					return nil, nil, fmt.Errorf("board %s: keys %s and %s are in different hash slots", name, keys[0], k)
				}
			}
			ci, ok := bySlot[slot]
			if !ok {
				ci = len(calls)
				bySlot[slot] = ci
				calls = append(calls, slotCall{})
			}
			c := &calls[ci]
			c.keys = append(c.keys, keys...)
			c.counts = append(c.counts, len(keys))
			c.reads = append(c.reads, rankingRead{t: t, board: bi, window: wi})
		}
	}
	return calls, template, nil
}
