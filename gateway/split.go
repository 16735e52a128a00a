package gateway

import (
	"bytes"
	"encoding/json"
	"slices"
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
	os, array, err := parse(body, nil)
	if err != nil {
		return nil, array, err
	}
	objs = make([]Object, len(os))
	for i, o := range os {
		objs[i] = Object{Room: string(o.room), Raw: o.raw}
	}
	return objs, array, nil
}

// object is an Object as the callback endpoint keeps it: its room_id in
// bytes, a sub-slice of the body (or, for a room_id written with escapes,
// the unescaped id in a slice of its own).
type object struct {
	room []byte
	raw  []byte
}

// parse is Parse appending the objects to objs, which it reuses.
func parse(body []byte, objs []object) (_ []object, array bool, err error) {
	objs = objs[:0]
	if !valid(body) {
		return objs, false, &BodyError{-1, "not well-formed JSON"}
	}
	// From here on body is known to be valid JSON, so the scanner below
	// only has to find boundaries, never to report syntax errors.
	i := skipSpace(body, 0)
	switch body[i] {
	case '{':
		end := skipValue(body, i)
		room, err := roomOf(body[i:end], 0)
		if err != nil {
			return objs, false, err
		}
		return append(objs, object{room, body[i:end]}), false, nil
	case '[':
		i = skipSpace(body, i+1)
		if body[i] == ']' {
			return objs, true, &BodyError{-1, "empty array: send at least one object"}
		}
		for n := 0; ; n++ {
			if body[i] != '{' {
				return objs, true, &BodyError{n, "not a JSON object"}
			}
			end := skipValue(body, i)
			room, err := roomOf(body[i:end], n)
			if err != nil {
				return objs, true, err
			}
			objs = append(objs, object{room, body[i:end]})
			i = skipSpace(body, end)
			if body[i] == ']' {
				return objs, true, nil
			}
			i = skipSpace(body, i+1) // past ','
		}
	default:
		return objs, false, &BodyError{-1, "must be a JSON object or an array of objects"}
	}
}

// roomOf returns the room_id of the valid JSON object obj (index n).
func roomOf(obj []byte, n int) ([]byte, error) {
	var room []byte
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
				return nil, &BodyError{n, "room_id: given more than once"}
			}
			found = true
			if obj[i] != '"' {
				return nil, &BodyError{n, "room_id: must be a string"}
			}
			room = unquoteBytes(obj[i:vEnd])
			if err := codec.CheckIDBytes(room); err != nil {
				return nil, &BodyError{n, "room_id: " + err.Error()}
			}
		}
		i = skipSpace(obj, vEnd)
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	if !found {
		return nil, &BodyError{n, "room_id: required"}
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

// unquoteBytes returns the text of the valid JSON string q (with its
// quotes): a sub-slice of q when it has no escape.
func unquoteBytes(q []byte) []byte {
	if bytes.IndexByte(q, '\\') < 0 {
		return q[1 : len(q)-1]
	}
	return []byte(unquote(q))
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
	os := make([]object, len(objs))
	for i, o := range objs {
		os[i] = object{room: []byte(o.Room), raw: o.Raw}
	}
	var s splitter
	recs := s.split(os, array)
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = Record{Room: string(r.room), Value: r.value, Objects: r.objects}
	}
	return out
}

// record is a Record as the callback endpoint keeps it: its room in bytes.
type record struct {
	room    []byte
	value   []byte
	objects int
	size    int // bytes of value, while split sizes it
}

// splitter is Split's scratch space, reused from one request to the next.
type splitter struct {
	recs []record
	idx  []int  // the record of each object
	vals []byte // the values of an array's records, one after another
}

// split is Split into s's scratch space: the records, and the values of
// an array's records, are valid until the next call.
func (s *splitter) split(objs []object, array bool) []record {
	s.recs = s.recs[:0]
	if !array {
		s.recs = append(s.recs, record{room: objs[0].room, value: objs[0].raw, objects: 1})
		return s.recs
	}
	// Room of each object → index of its record. Requests are small; a
	// linear search beats a map up to a few dozen rooms.
	var byRoom map[string]int
	s.idx = slices.Grow(s.idx[:0], len(objs))[:len(objs)]
	total := 0
	for n, o := range objs {
		r := -1
		if byRoom != nil {
			if k, ok := byRoom[string(o.room)]; ok {
				r = k
			}
		} else {
			for k := range s.recs {
				if bytes.Equal(s.recs[k].room, o.room) {
					r = k
					break
				}
			}
		}
		if r < 0 {
			r = len(s.recs)
			s.recs = append(s.recs, record{room: o.room, size: 1}) // '['
			total++
			if byRoom == nil && len(s.recs) > 32 {
				byRoom = make(map[string]int, 2*len(s.recs))
				for k := range s.recs {
					byRoom[string(s.recs[k].room)] = k
				}
			} else if byRoom != nil {
				byRoom[string(o.room)] = r
			}
		}
		s.idx[n] = r
		s.recs[r].objects++
		s.recs[r].size += len(o.raw) + 1 // the object and ',' or ']'
		total += len(o.raw) + 1
	}
	// Each record's value gets its own stretch of vals, capped so that
	// appending to one can never write into the next.
	if cap(s.vals) < total {
		s.vals = make([]byte, 0, total)
	}
	off := 0
	for k := range s.recs {
		r := &s.recs[k]
		r.value = s.vals[off : off : off+r.size]
		off += r.size
	}
	for n, o := range objs {
		r := &s.recs[s.idx[n]]
		if len(r.value) == 0 {
			r.value = append(r.value, '[')
		} else {
			r.value = append(r.value, ',')
		}
		r.value = append(r.value, o.raw...)
	}
	for k := range s.recs {
		s.recs[k].value = append(s.recs[k].value, ']')
	}
	return s.recs
}
