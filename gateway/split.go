package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/rostrumhq/rostrum/codec"
)

// Object is one callback object of a request body.
type Object struct {
	Room string // its room_id, unescaped
	Raw  []byte // its bytes exactly as received: a sub-slice of the body
}

// Record is what a request becomes for one room: the value written to Kafka
// under key Room.
type Record struct {
	Room    string
	Value   []byte // the object's bytes, or "[" + the objects' bytes joined by "," + "]"
	Objects int    // how many objects Value holds
}

// BodyError is a body the gateway cannot route: not one JSON object or an
// array of objects, or an object without a valid room_id. It is a 400.
type BodyError struct {
	Index  int    // the object's index in the array (0 for a single object), or -1 for the whole body
	Reason string // why, naming the field
}

func (e *BodyError) Error() string {
	if e.Index < 0 {
		return "body: " + e.Reason
	}
	return "object " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Parse reads a request body: one JSON object, or a JSON array of one or
// more objects. It checks only what routing needs: that the body is
// well-formed JSON and that every object has a top-level "room_id" string
// (given once) of the id syntax of codec.CheckID. Every other field passes
// unchecked. array tells which of the two forms the body has. The objects'
// Raw slices alias body.
func Parse(body []byte) (objs []Object, array bool, err error) {
	if !json.Valid(body) {
		return nil, false, &BodyError{-1, "not well-formed JSON"}
	}
	// From here on body is known to be valid JSON, so the scanner below
	// only has to find boundaries, never to report syntax errors.
	i := skipSpace(body, 0)
	switch body[i] {
	case '{':
		end := skipValue(body, i)
		room, err := roomOf(body[i:end], 0)
		if err != nil {
			return nil, false, err
		}
		return []Object{{room, body[i:end]}}, false, nil
	case '[':
		i = skipSpace(body, i+1)
		if body[i] == ']' {
			return nil, true, &BodyError{-1, "empty array: send at least one object"}
		}
		for n := 0; ; n++ {
			if body[i] != '{' {
				return nil, true, &BodyError{n, "not a JSON object"}
			}
			end := skipValue(body, i)
			room, err := roomOf(body[i:end], n)
			if err != nil {
				return nil, true, err
			}
			objs = append(objs, Object{room, body[i:end]})
			i = skipSpace(body, end)
			if body[i] == ']' {
				return objs, true, nil
			}
			i = skipSpace(body, i+1) // past ','
		}
	default:
		return nil, false, &BodyError{-1, "must be a JSON object or an array of objects"}
	}
}

// roomOf returns the room_id of the valid JSON object obj (index n).
func roomOf(obj []byte, n int) (string, error) {
	var room string
	found := false
	i := skipSpace(obj, 1)
	for obj[i] != '}' {
		kEnd := skipString(obj, i)
		key := obj[i:kEnd]
		i = skipSpace(obj, kEnd)
		i = skipSpace(obj, i+1) // past ':'
		vEnd := skipValue(obj, i)
		if isRoomKey(key) {
			if found {
				return "", &BodyError{n, "room_id: given more than once"}
			}
			found = true
			if obj[i] != '"' {
				return "", &BodyError{n, "room_id: must be a string"}
			}
			room = unquote(obj[i:vEnd])
			if err := codec.CheckID(room); err != nil {
				return "", &BodyError{n, "room_id: " + err.Error()}
			}
		}
		i = skipSpace(obj, vEnd)
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	if !found {
		return "", &BodyError{n, "room_id: required"}
	}
	return room, nil
}

// isRoomKey reports whether the quoted key q reads "room_id", escapes
// decoded ("room\u005fid" is room_id too, as for any JSON reader).
func isRoomKey(q []byte) bool {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q) == `"room_id"`
	}
	return unquote(q) == "room_id"
}

// unquote returns the text of the valid JSON string q (with its quotes).
func unquote(q []byte) string {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1])
	}
	var s string
	_ = json.Unmarshal(q, &s) // q is valid JSON
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// skipValue returns the index after the valid JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	default: // number, true, false, null
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		return i
	}
}

// Split groups objects by room: one Record per room, rooms in the order of
// their first object, each room's objects in their order. A body that was
// a single object (array false) gives that object's bytes unchanged; an
// array gives each room the JSON array of its objects' bytes joined by ",",
// even when the room has one object, so a record keeps the form it was
// sent in.
func Split(objs []Object, array bool) []Record {
	if !array {
		return []Record{{Room: objs[0].Room, Value: objs[0].Raw, Objects: 1}}
	}
	// Room of each object → index of its record. Requests are small; a
	// linear search beats a map up to a few dozen rooms.
	var recs []Record
	var byRoom map[string]int
	idx := make([]int, len(objs))
	size := make([]int, 0, 4)
	for n, o := range objs {
		r := -1
		if byRoom != nil {
			if k, ok := byRoom[o.Room]; ok {
				r = k
			}
		} else {
			for k := range recs {
				if recs[k].Room == o.Room {
					r = k
					break
				}
			}
		}
		if r < 0 {
			r = len(recs)
			recs = append(recs, Record{Room: o.Room})
			size = append(size, 1) // '['
			if byRoom == nil && len(recs) > 32 {
				byRoom = make(map[string]int, 2*len(recs))
				for k := range recs {
					byRoom[recs[k].Room] = k
				}
			} else if byRoom != nil {
				byRoom[o.Room] = r
			}
		}
		idx[n] = r
		recs[r].Objects++
		size[r] += len(o.Raw) + 1 // the object and ',' or ']'
	}
	for k := range recs {
		recs[k].Value = make([]byte, 0, size[k])
	}
	for n, o := range objs {
		r := &recs[idx[n]]
		if len(r.Value) == 0 {
			r.Value = append(r.Value, '[')
		} else {
			r.Value = append(r.Value, ',')
		}
		r.Value = append(r.Value, o.Raw...)
	}
	for k := range recs {
		recs[k].Value = append(recs[k].Value, ']')
	}
	return recs
}
