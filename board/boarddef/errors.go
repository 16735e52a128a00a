package boarddef

import "errors"

// Errors of naming a board, period, window or member (wrapped with
// detail): Board.ParsePeriod returns ErrBadParam and ErrUnknownPeriod,
// Board.RemoveRecord ErrBadParam, and the read methods of package board's
// Store all five. The HTTP layer maps ErrBadParam to 400 and the others to
// 404.
var (
	ErrUnknownBoard  = errors.New("unknown board")
	ErrUnknownPeriod = errors.New("unknown period")
	ErrUnknownWindow = errors.New("unknown window")
	ErrUnknownMember = errors.New("unknown member")
	ErrBadParam      = errors.New("bad parameter")
)
