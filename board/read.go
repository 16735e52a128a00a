package board

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// Info describes a board for the list endpoint.
type Info struct {
	Name      string
	Kind      boarddef.Kind
	Period    string    // current period label (periodic), else ""
	NextReset time.Time // end of the current period, or the next slice boundary
	Windows   []string  // rolling and windows boards
	Settles   bool      // closed periods are settled (settle.go)
	HalfLife  string    // decay boards: the half-life as configured ("7d"); else ""
}

// Entry is one ranked member.
type Entry struct {
	Member    string
	Rank      int64 // 1-based, unique (equal scores follow Redis's order)
	Total     int64 // units of 1/Scale (boarddef.Board.FormatUnits writes it); max(sum, floor); decay boards: the decayed value at the read's clock, rounded
	ReachedAt int64 // Unix ms: event time at which the member reached its total
}

// Page is a slice of a board's ranking.
type Page struct {
	Board        string
	Period       string // periodic: the period's label
	Window       string // rolling and windows: the window's name (total boards have neither)
	TotalMembers int64
	Members      []Entry
}

// Boards describes every board at now.
func (s *Store) Boards(now time.Time) []Info {
	out := make([]Info, 0, len(s.boards))
	for _, b := range s.boards {
		inf := Info{Name: b.Name(), Kind: b.Kind(), NextReset: b.NextReset(now), Windows: b.Windows(), Settles: b.Settles()}
		if b.HalfLife() > 0 {
			inf.HalfLife = boarddef.FormatHalfLife(b.HalfLife())
		}
		if b.Kind() == boarddef.Periodic {
			inf.Period = b.Period(now).Label
		}
		out = append(out, inf)
	}
	return out
}

// MaxPage is the most members Top and Around return in one page.
const MaxPage = 1000

// Top returns n members (1..MaxPage) from rank offset+1 of board's period
// (periodic; "" is the current one) or window (rolling and windows; "" is
// the first). Errors: ErrUnknownBoard, ErrUnknownPeriod (a period in the
// future or past the retention), ErrUnknownWindow, ErrBadParam.
func (s *Store) Top(ctx context.Context, board, period, window string, offset, n int) (Page, error) {
	if offset < 0 {
		return Page{}, fmt.Errorf("%w: offset %d must not be negative", boarddef.ErrBadParam, offset)
	}
	if n < 1 || n > MaxPage {
		return Page{}, fmt.Errorf("%w: n %d must be between 1 and %d", boarddef.ErrBadParam, n, MaxPage)
	}
	t, err := s.target(board, period, window)
	if err != nil {
		return Page{}, err
	}
	return s.read(ctx, t, readArgs{mode: readTop, offset: offset, n: n})
}

// Member returns member's entry; ErrUnknownMember when it is not ranked in
// that period or window.
func (s *Store) Member(ctx context.Context, board, member, period, window string) (Entry, error) {
	if member == "" {
		return Entry{}, fmt.Errorf("%w: empty member", boarddef.ErrBadParam)
	}
	t, err := s.target(board, period, window)
	if err != nil {
		return Entry{}, err
	}
	p, err := s.read(ctx, t, readArgs{mode: readMember, member: member})
	if err != nil {
		return Entry{}, err
	}
	if len(p.Members) != 1 {
		return Entry{}, fmt.Errorf("%w: %q is not ranked", boarddef.ErrUnknownMember, member)
	}
	return p.Members[0], nil
}

// Around returns member with up to n (0..MaxPage/2) members ranked above
// and n below it; ErrUnknownMember when it is not ranked.
func (s *Store) Around(ctx context.Context, board, member string, n int, period, window string) (Page, error) {
	if member == "" {
		return Page{}, fmt.Errorf("%w: empty member", boarddef.ErrBadParam)
	}
	if n < 0 || n > MaxPage/2 {
		return Page{}, fmt.Errorf("%w: n %d must be between 0 and %d", boarddef.ErrBadParam, n, MaxPage/2)
	}
	t, err := s.target(board, period, window)
	if err != nil {
		return Page{}, err
	}
	p, err := s.read(ctx, t, readArgs{mode: readAround, member: member, n: n})
	if err == nil && len(p.Members) == 0 { // a ranked member lists at least itself
		return Page{}, fmt.Errorf("%w: %q is not ranked", boarddef.ErrUnknownMember, member)
	}
	return p, err
}

// target is one readable ranking: a board's period or window.
type target struct {
	b      *boarddef.Board
	period string
	window int
	zset   string
	state  string
	base   string // decay boards: the base hash
	origin int64  // periodic: the period start, origin of the reached time in the score
}

func (s *Store) target(board, period, window string) (target, error) {
	b, ok := s.byName[board]
	if !ok {
		return target{}, fmt.Errorf("%w: %q", boarddef.ErrUnknownBoard, board)
	}
	t := target{b: b}
	P := s.prefix(b)
	if b.Kind() == boarddef.Total {
		if period != "" || window != "" {
			return target{}, fmt.Errorf("%w: board %s is a total board and has no periods or windows", boarddef.ErrBadParam, board)
		}
		t.zset, t.state = P+"T:z", P+"T:m"
		if b.HalfLife() > 0 {
			t.base = P + "T:b"
		}
		return t, nil
	}
	if b.Kind() == boarddef.Periodic {
		if window != "" {
			return target{}, fmt.Errorf("%w: board %s is periodic and has no windows", boarddef.ErrBadParam, board)
		}
		now := s.now()
		cur := b.Period(now)
		p := cur
		if period != "" {
			var err error
			if p, err = b.ParsePeriod(period); err != nil {
				return target{}, err
			}
			if d := b.PeriodsBetween(p, cur, int64(b.Retention())); d < 0 || d > int64(b.Retention()) {
				return target{}, fmt.Errorf("%w: %s of board %s is not kept (the current one is %s, %d past ones are kept)",
					boarddef.ErrUnknownPeriod, period, board, cur.Label, b.Retention())
			}
		}
		t.period, t.origin = p.Label, p.Start.UnixMilli()
		t.zset, t.state = s.periodKey(b, p.Label, "z"), s.periodKey(b, p.Label, "m")
		return t, nil
	}
	if period != "" {
		return target{}, fmt.Errorf("%w: board %s is %s and has no periods", boarddef.ErrBadParam, board, b.Kind())
	}
	j, ok := b.Window(window)
	if !ok {
		return target{}, fmt.Errorf("%w: board %s has windows %s, not %q", boarddef.ErrUnknownWindow, board, strings.Join(b.Windows(), ", "), window)
	}
	t.window = j
	t.zset, t.state = windowKey(P, j), P+"m"
	if b.HalfLife() > 0 {
		t.base = P + "b"
	}
	return t, nil
}

func (s *Store) read(ctx context.Context, t target, a readArgs) (Page, error) {
	keys := []string{t.zset, t.state}
	if t.base != "" {
		keys = append(keys, t.base)
	}
	now := s.now() // a decay board's values are read at the wall clock
	cmds, err := s.eval(ctx, readLua, 1, func(int) ([]string, []any) {
		return keys, a.append(nil)
	})
	if err != nil {
		return Page{}, err
	}
	vals, err := cmds[0].Slice()
	if err != nil {
		return Page{}, fmt.Errorf("board %s: read: %w", t.b.Name(), err)
	}
	page := Page{Board: t.b.Name(), Period: t.period, Members: []Entry{}}
	if t.b.Kind() == boarddef.Rolling || t.b.Kind() == boarddef.Windows {
		page.Window = t.b.Windows()[t.window]
	}
	if len(vals) == 1 {
		return page, nil // not ranked
	}
	if len(vals) < 3 || (len(vals)-3)%3 != 0 {
		return Page{}, fmt.Errorf("board %s: read: unexpected reply of %d values", t.b.Name(), len(vals))
	}
	page.TotalMembers, _ = vals[0].(int64)
	rank, _ := vals[1].(int64)
	bs, _ := vals[2].(string)
	base, _ := strconv.ParseInt(bs, 10, 64)
	for k := 3; k < len(vals); k += 3 {
		member, _ := vals[k].(string)
		st, _ := vals[k+1].(string)
		e := Entry{Member: member, Rank: rank + 1}
		rank++
		sc, _ := vals[k+2].(string)
		e.Total, e.ReachedAt = t.standing(st, sc, base, now)
		page.Members = append(page.Members, e)
	}
	return page, nil
}

// standing returns the total shown and the reached time of a ranked member
// from its field of the state hash st and its score sc: "total reached_at"
// (periodic and total boards) or "reached_at total_0 … total_k" (rolling
// and windows boards); a compact board's member without a field is decoded
// from its score; a decay board's sum is decayed from base to now.
func (t target) standing(st, sc string, base int64, now time.Time) (total, reached int64) {
	f := strings.Fields(st)
	num := func(i int) int64 {
		if i >= len(f) {
			return 0
		}
		x, _ := strconv.ParseFloat(f[i], 64)
		return int64(x)
	}
	switch {
	case st == "" && t.b.ScoreHoldsState():
		x, _ := strconv.ParseFloat(sc, 64)
		total, reached = t.b.Unscore(x, t.origin)
	case t.b.Kind() == boarddef.Periodic || t.b.Kind() == boarddef.Total:
		total, reached = num(0), num(1)
	default:
		reached, total = num(0), num(1+t.window)
	}
	if t.b.HalfLife() > 0 {
		total = t.b.Decayed(total, base, now)
	}
	return t.b.Shown(total), reached
}
