package gateway

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestSplitScratchReuse: the callback endpoint parses and splits every
// request into scratch space kept from the requests before it. What it
// gets must be what a fresh Parse and Split give, whatever came before (a
// larger body, more rooms, a refused body), and no record's value may
// reach into another's.
func TestSplitScratchReuse(t *testing.T) {
	var many strings.Builder // 40 rooms: Split's map
	many.WriteString("[")
	for i := range 120 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"room_id":"r-%d","n":%d,"pad":"%s"}`, i%40, i, strings.Repeat("x", i%7))
	}
	many.WriteString("]")
	bodies := []string{
		many.String(),
		`{"room_id":"r-1","user_id":"u-1","type":"volume","value":512,"ts":1}`,
		`[{"room_id":"a","v":1},{"room_id":"b"},{"room_id":"a","v":2}]`,
		`[{"room_id":"a"},{"room_id":"b","x":1}`, // not JSON
		`[{"room_id":"a"},{"room_id":"bad id"}]`,
		`{"room_id":"p\u002d1"}`,
		`[{"room_id":"z"}]`,
		`[{"room_id":"q","long":"` + strings.Repeat("y", 300) + `"},{"room_id":"w"}]`,
		`{"room_id":"s"}`,
	}
	var objs []object
	var s splitter
	for round := range 2 {
		for k := range bodies {
			if round == 1 {
				k = len(bodies) - 1 - k // the other order
			}
			body := []byte(bodies[k])
			wantObjs, wantArray, wantErr := Parse(body)
			var array bool
			var err error
			objs, array, err = parse(body, objs)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || array != wantArray {
				t.Fatalf("body %d: parse %v, %v; Parse %v, %v", k, array, err, wantArray, wantErr)
			}
			if err != nil {
				continue
			}
			if len(objs) != len(wantObjs) {
				t.Fatalf("body %d: %d objects, want %d", k, len(objs), len(wantObjs))
			}
			for i := range objs {
				if string(objs[i].room) != wantObjs[i].Room || !bytes.Equal(objs[i].raw, wantObjs[i].Raw) {
					t.Fatalf("body %d object %d: %q %q, want %q %q", k, i, objs[i].room, objs[i].raw, wantObjs[i].Room, wantObjs[i].Raw)
				}
			}
			want := Split(wantObjs, wantArray)
			got := s.split(objs, array)
			if len(got) != len(want) {
				t.Fatalf("body %d: %d records, want %d", k, len(got), len(want))
			}
			for i := range got {
				if string(got[i].room) != want[i].Room || !bytes.Equal(got[i].value, want[i].Value) || got[i].objects != want[i].Objects {
					t.Fatalf("body %d record %d: %q %q %d, want %q %q %d", k, i, got[i].room, got[i].value, got[i].objects, want[i].Room, want[i].Value, want[i].Objects)
				}
				if array && cap(got[i].value) != len(got[i].value) {
					t.Errorf("body %d record %d: value of %d bytes has room for %d: an append would write into the next", k, i, len(got[i].value), cap(got[i].value))
				}
			}
		}
	}
}
