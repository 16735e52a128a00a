package board

import "fmt"

// RejectError says why Batch.Add did not count an event of a record. Class
// is a short metrics label: "late" (its period or slice had closed when the
// record was produced, grace included), "ts" (its time is outside what the
// board's score layout can encode), "value" (a value the board refuses,
// boarddef.Board.Units says why) or "board" (a remove event names no
// configured board).
type RejectError struct {
	Board string
	Event int // index of the event in the record
	Class string
	Msg   string
	More  int // further (board, event) pairs of the record rejected
}

func (e *RejectError) Error() string {
	if e.More > 0 {
		return fmt.Sprintf("board %s: event[%d]: %s (and %d more rejected on this or other boards)", e.Board, e.Event, e.Msg, e.More)
	}
	return fmt.Sprintf("board %s: event[%d]: %s", e.Board, e.Event, e.Msg)
}
