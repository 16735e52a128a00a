package codec

import "strconv"

// CheckID returns nil when id is a valid room or user id (1..128 bytes of
// [A-Za-z0-9._:@-], docs/DESIGN.md §2), and otherwise an error saying why, in the
// words the decoder uses. It is the one definition of the id syntax for the
// code that routes ids without decoding events (the gateway).
func CheckID(id string) error { return checkID(id) }

// CheckIDBytes is CheckID for an id in bytes, such as a room_id read from
// a callback body, without making a string of it.
func CheckIDBytes(id []byte) error { return checkID(id) }

func checkID[T string | []byte](id T) error {
	if len(id) < 1 || len(id) > maxIDBytes {
		return idError("must be 1.." + strconv.Itoa(maxIDBytes) + " bytes, got " + strconv.Itoa(len(id)))
	}
	for j := 0; j < len(id); j++ {
		if !idByte[id[j]] {
			return idError("invalid character " + quoteByte(id[j]) + " at byte " + strconv.Itoa(j) + " (allowed [A-Za-z0-9._:@-])")
		}
	}
	return nil
}

// idError is CheckID's error: the reason alone, for the caller to place.
type idError string

func (e idError) Error() string { return string(e) }
