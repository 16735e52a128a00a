package board

import (
	"context"
	"time"
)

// Info describes a board for the list endpoint.
type Info struct {
	Name      string
	Kind      Kind
	Period    string    // current period label (periodic), else ""
	NextReset time.Time // end of the current period, or the next slice boundary
	Windows   []string  // rolling and windows boards
}

// Entry is one ranked member.
type Entry struct {
	Member    string
	Rank      int64 // 1-based, unique (equal scores follow Redis's order)
	Total     int64
	ReachedAt int64 // Unix ms: event time at which the member reached its total
}

// Page is a slice of a board's ranking.
type Page struct {
	Board        string
	Period       string // periodic: the period's label
	Window       string // rolling and windows: the window's name
	TotalMembers int64
	Members      []Entry
}

// Boards describes every board at now.
func (s *Store) Boards(now time.Time) []Info {
	out := make([]Info, 0, len(s.boards))
	for _, b := range s.boards {
		inf := Info{Name: b.name, Kind: b.kind, NextReset: b.NextReset(now), Windows: b.Windows()}
		if b.kind == Periodic {
			inf.Period = b.Period(now).Label
		}
		out = append(out, inf)
	}
	return out
}

// Top returns n members from rank offset+1 of board's period (periodic;
// "" is the current one) or window (windows; "" is the first).
func (s *Store) Top(ctx context.Context, board, period, window string, offset, n int) (Page, error) {
	return Page{}, nil
}

// Member returns member's entry; ErrUnknownMember when it is not ranked.
func (s *Store) Member(ctx context.Context, board, member, period, window string) (Entry, error) {
	return Entry{}, nil
}

// Around returns member with up to n members ranked above and n below it.
func (s *Store) Around(ctx context.Context, board, member string, n int, period, window string) (Page, error) {
	return Page{}, nil
}
