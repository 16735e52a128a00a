package gateway

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
)

// FuzzSplit holds Parse and Split to their contract on any body:
//
//   - they never panic;
//   - an accepted body is one JSON object or an array of them, each with a
//     room_id string that is a valid id: encoding/json, reading each
//     object on its own, finds the same room id (so nothing the gateway
//     cannot route is accepted, and the room is the one any reader sees);
//   - a body encoding/json reads as objects with valid room ids is
//     refused only for a repeated room_id key;
//   - the split re-joins to the original objects: each record's value
//     parses back to its room's objects, byte for byte, in their order,
//     and the records together hold every object once.
//
// Seeds: testdata/fuzz/FuzzSplit.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		`{"room_id":"r-1","user_id":"u","type":"volume","value":512,"ts":1}`,
		`[{"room_id":"a"},{"room_id":"b"},{"room_id":"a","x":[1,{"room_id":"c"}]}]`,
		` [ {"room_id" : "p\u002d1"} , {"r":"}","room_id":"p-1"} ] `,
		`{"room_id":"a","room_id":"b"}`,
		`[]`, `[1]`, `"x"`, `{"room_id":1}`, `{"room_id":""}`, `{"x":"\"room_id\":\"a\""}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		objs, array, err := Parse(body)
		if err != nil {
			if _, ok := err.(*BodyError); !ok {
				t.Fatalf("Parse error of type %T: %v", err, err)
			}
			if readable(body) && !repeatsRoomKey(body) {
				t.Fatalf("Parse refused %q (%v), which encoding/json reads as routable objects", body, err)
			}
			return
		}
		if len(objs) == 0 || !array && len(objs) != 1 {
			t.Fatalf("accepted with %d objects (array %v)", len(objs), array)
		}
		for i, o := range objs {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(o.Raw, &m); err != nil || !bytes.HasPrefix(o.Raw, []byte("{")) {
				t.Fatalf("object %d %q is not a JSON object: %v", i, o.Raw, err)
			}
			var room string
			if err := json.Unmarshal(m["room_id"], &room); err != nil || room != o.Room {
				t.Fatalf("object %d: Parse says room %q, encoding/json %q (%v)", i, o.Room, room, err)
			}
			if codec.CheckID(room) != nil {
				t.Fatalf("object %d: accepted invalid room id %q", i, room)
			}
		}

		recs := Split(objs, array)
		byRoom := map[string][][]byte{}
		for _, o := range objs {
			byRoom[o.Room] = append(byRoom[o.Room], o.Raw)
		}
		if len(recs) != len(byRoom) {
			t.Fatalf("%d records for %d rooms", len(recs), len(byRoom))
		}
		total := 0
		for _, r := range recs {
			back, isArray, err := Parse(r.Value)
			if err != nil || isArray != array {
				t.Fatalf("record of %s does not parse back (%v, array %v): %q", r.Room, err, isArray, r.Value)
			}
			want := byRoom[r.Room]
			if len(back) != len(want) || r.Objects != len(want) {
				t.Fatalf("record of %s holds %d objects (says %d), want %d", r.Room, len(back), r.Objects, len(want))
			}
			for i := range back {
				if back[i].Room != r.Room || !bytes.Equal(back[i].Raw, want[i]) {
					t.Fatalf("record of %s object %d: %q, want %q", r.Room, i, back[i].Raw, want[i])
				}
			}
			total += len(back)
		}
		if total != len(objs) {
			t.Fatalf("records hold %d objects, the body %d", total, len(objs))
		}
	})
}

// readable reports whether encoding/json reads body as one object or a
// non-empty array of objects, each with a room_id string that is a valid id.
func readable(body []byte) bool {
	var one map[string]json.RawMessage
	if json.Unmarshal(body, &one) == nil && one != nil {
		return validRoom(one)
	}
	var many []map[string]json.RawMessage
	if json.Unmarshal(body, &many) != nil || len(many) == 0 {
		return false
	}
	for _, m := range many {
		if m == nil || !validRoom(m) {
			return false
		}
	}
	return true
}

func validRoom(m map[string]json.RawMessage) bool {
	var room string
	raw, ok := m["room_id"]
	return ok && bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) && json.Unmarshal(raw, &room) == nil && codec.CheckID(room) == nil
}

// repeatsRoomKey reports whether an object of the body (the body itself, or
// an element of the top array) has the key room_id more than once, which
// encoding/json's maps hide. It walks the token stream.
func repeatsRoomKey(body []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object, wantKey bool
		rooms           int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		isKey := false
		if n := len(stack); n > 0 && stack[n-1].object && tok != json.Delim('}') {
			isKey = stack[n-1].wantKey
			stack[n-1].wantKey = !isKey
		}
		if isKey {
			if tok == "room_id" {
				stack[len(stack)-1].rooms++
				if stack[len(stack)-1].rooms > 1 {
					return true
				}
			}
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}
