package boarddef

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// RemoveRecord returns the key and value of the callback record that takes
// member off b (docs/DESIGN.md §8, "Corrections"): a remove event with a
// fresh id, stamped now, for the client callback topic. The member goes in
// the field b ranks by; room_id, the record key, is the member on a room
// board and b's name on a user board (a user's events arrive through many
// rooms: one fixed key keeps a board's removals in one partition's order),
// and user_id is b's name on a room board. settled asks for the member's
// removal from the settled snapshots too.
//
// It returns an error wrapping ErrBadParam for a member that is not a
// valid id (1..128 bytes of [A-Za-z0-9._:@-]), and the error of the random
// source when it fails.
func (b *Board) RemoveRecord(member string, settled bool, now time.Time) (key, value []byte, id string, err error) {
	if err := codec.CheckID(member); err != nil {
		return nil, nil, "", fmt.Errorf("%w: member: %v", ErrBadParam, err)
	}
	var rnd [12]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, nil, "", fmt.Errorf("board %s: remove id: %w", b.name, err)
	}
	id = "rm-" + hex.EncodeToString(rnd[:])
	room, user := b.name, member
	if b.byRoom {
		room, user = member, b.name
	}
	v := make([]byte, 0, 160)
	v = append(v, `{"type":"remove","board":`...)
	v = strconv.AppendQuote(v, b.name)
	v = append(v, `,"room_id":`...)
	v = strconv.AppendQuote(v, room)
	v = append(v, `,"user_id":`...)
	v = strconv.AppendQuote(v, user)
	if settled {
		v = append(v, `,"settled":true`...)
	}
	v = append(v, `,"ts":`...)
	v = strconv.AppendInt(v, now.UnixMilli(), 10)
	v = append(v, `,"id":`...)
	v = strconv.AppendQuote(v, id)
	v = append(v, '}')
	return []byte(room), v, id, nil
}
