package board_test

import (
	"testing"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/examples"
)

// loadExample compiles examples/boards.yaml, the configuration of every seed
// scenario.
func loadExample(t testing.TB) []*board.Board {
	t.Helper()
	bs, err := examples.Boards()
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

func TestExampleConfig(t *testing.T) {
	bs := loadExample(t)
	if len(bs) != 10 {
		t.Fatalf("%d boards", len(bs))
	}
	trades := bs[5]
	if got := trades.Windows(); len(got) != 5 || got[0] != "3m" || got[4] != "24h" {
		t.Errorf("item-trades windows %v", got)
	}
	if g := trades.Grace().String(); g != "10s" {
		t.Errorf("item-trades grace %s", g)
	}
	// Seed 001's layout: 23 bits of total above 30 bits of milliseconds.
	if w := bs[1]; w.MaxTotal() != 1<<23-1 || w.ReachedBits() != 30 {
		t.Errorf("weekly-score layout: max total %d, reached bits %d", w.MaxTotal(), w.ReachedBits())
	}
}
