package ranking

import "errors"

// ErrUnknownRoom is returned by a room read (the sink's RoomView) for a
// room that has no keys in Redis: never seen in this environment, or
// expired after its idle TTL.
var ErrUnknownRoom = errors.New("unknown room")

// RoomView is a room as the live page shows it.
type RoomView struct {
	Room    string
	Seq     int64        // seq of the stored stable list; 0: none stored yet
	Stable  []MemberView // the stored stable list, in slot order
	Raw     []MemberView // the raw top-N, best first
	Members int          // ranked members (ZCARD of the ranking)
}

// MemberView is one member of a top list with the fields of its score.
type MemberView struct {
	UserID string
	Audio  uint8  // 0 off, 1 on
	Volume uint16 // 0..999
	Video  uint8  // 0 off, 1 on
	Role   string // role name, e.g. "host"
	// ScreenShare and Spotlight are 0 or 1.
	ScreenShare uint8
	Spotlight   uint8
	Score       float64
	TS          int64 // newest event time of the member, Unix ms (from a score: rounded down to its time unit)
}

// RoomSummary is one line of the room list.
type RoomSummary struct {
	Room    string
	Seq     int64 // seq of the stored stable list
	Members int64 // ranked members
}
