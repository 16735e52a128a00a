package chaos

import (
	"bytes"
	"testing"
	"time"
)

// TestBoardsAt checks the boards a processor started with BoardsYAML(at)
// runs: boards.yaml's boards, the decay boards with an epoch and grace
// whose base target (floor((now − grace − epoch)/H) − 1) moves by one at
// at, and boards.yaml itself when at is zero.
func TestBoardsAt(t *testing.T) {
	if y, err := BoardsYAML(time.Time{}); err != nil || !bytes.Equal(y, boardsYAML) {
		t.Fatalf("BoardsYAML(zero) = %d bytes, %v; want boards.yaml", len(y), err)
	}
	plain, err := BoardsAt(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 2, 47, 13, 0, time.UTC)
	placed, err := BoardsAt(at)
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != len(plain) {
		t.Fatalf("%d boards placed, %d in boards.yaml", len(placed), len(plain))
	}
	target := func(h, now, epoch, grace int64) int64 {
		d := now - grace - epoch
		q := d / h
		if d%h != 0 && d < 0 {
			q--
		}
		return q - 1
	}
	decay := 0
	for i, b := range placed {
		if b.Name() != plain[i].Name() || b.Kind() != plain[i].Kind() {
			t.Fatalf("board %d: %s (%v) placed, %s (%v) in boards.yaml", i, b.Name(), b.Kind(), plain[i].Name(), plain[i].Kind())
		}
		h := b.HalfLife().Milliseconds()
		if h == 0 {
			if !b.Epoch().Equal(plain[i].Epoch()) || b.Grace() != plain[i].Grace() {
				t.Errorf("%s: epoch %s grace %s, boards.yaml's %s %s", b.Name(), b.Epoch(), b.Grace(), plain[i].Epoch(), plain[i].Grace())
			}
			continue
		}
		decay++
		e, g, ms := b.Epoch().UnixMilli(), b.Grace().Milliseconds(), at.UnixMilli()
		if before, after := target(h, ms-1, e, g), target(h, ms, e, g); after != before+1 || after != 1001 {
			t.Errorf("%s: base target %d just before %s, %d at it; want 1000 then 1001", b.Name(), before, at, after)
		}
	}
	if decay == 0 {
		t.Fatal("boards.yaml has no decay board")
	}
}
