package trace

import (
	"strconv"
	"strings"

	"github.com/rostrumhq/rostrum/codec"
)

// bad returns a record the decoder must reject whole.
func (g *generator) bad() Record {
	e := g.sample()
	rec := Record{Topic: g.oneOf(topics[:]...), Key: e.RoomID}
	switch w := g.rng.IntN(100); {
	case w < 45:
		fs, why := g.breakEvent(e)
		rec.Value, rec.Bad = object(fs), why
		if g.rng.IntN(4) == 0 {
			rec.Value = array([][]byte{rec.Value})
		}
	case w < 60:
		// Good events and one bad one: the record is rejected whole.
		n := 2 + g.rng.IntN(5)
		objs := make([][]byte, n)
		bad := g.rng.IntN(n)
		for i := range objs {
			o := e
			o.UserID = g.memberOf(e.RoomID)
			if i != bad {
				objs[i] = object(eventFields(o, false))
				continue
			}
			fs, why := g.breakEvent(o)
			objs[i], rec.Bad = object(fs), "good and bad events in one array: "+why
		}
		rec.Value = array(objs)
	default:
		rec.Value, rec.Bad = g.breakRecord(e)
	}
	return rec
}

// sample returns a plausible event of a random member, at the clock, without
// touching the simulation.
func (g *generator) sample() codec.Event {
	r := g.pickRoom()
	e := codec.Event{
		RoomID: r.id,
		UserID: r.members[g.rng.IntN(len(r.members))].id,
		Type:   codec.Type(1 + g.rng.IntN(6)),
		TS:     g.now,
		Source: topicSource(g.oneOf(topics[:]...)),
	}
	switch e.Type {
	case codec.TypeAudio, codec.TypeVideo:
		e.Value = g.rng.Int64N(2)
	case codec.TypeVolume:
		e.Value = g.rng.Int64N(codec.MaxVolume + 1)
	case codec.TypeRole:
		e.Value = 1 + g.rng.Int64N(int64(codec.RoleAssistant))
	}
	return e
}

// memberOf returns the id of a random member of the room with id roomID.
func (g *generator) memberOf(roomID string) string {
	for _, r := range g.rooms {
		if r.id == roomID {
			return r.members[g.rng.IntN(len(r.members))].id
		}
	}
	panic("trace: no room " + roomID)
}

// breakRecord returns a record value that is wrong as a whole.
func (g *generator) breakRecord(e codec.Event) ([]byte, string) {
	good := func() []byte { return object(eventFields(e, g.rng.IntN(4) == 0)) }
	switch g.rng.IntN(9) {
	case 0:
		garbage := []string{
			"room_id=" + e.RoomID + "&user_id=" + e.UserID + "&type=volume&value=12",
			"<html><body><h1>502 Bad Gateway</h1></body></html>",
			`{room_id: "` + e.RoomID + `", user_id: "` + e.UserID + `"}`,
			`{'room_id': '` + e.RoomID + `', 'type': 'join'}`,
			"\x80\x81\xfe\xff",
		}
		return []byte(garbage[g.rng.IntN(len(garbage))]), "not json"
	case 1:
		// A proper prefix of a JSON object or array is never valid JSON.
		v := good()
		if g.rng.IntN(2) == 0 {
			v = array([][]byte{v, good()})
		}
		return v[:1+g.rng.IntN(len(v)-1)], "truncated"
	case 2:
		return []byte{}, "empty value"
	case 3:
		scalars := []string{"null", "42", `"volume"`, "true"}
		return []byte(scalars[g.rng.IntN(len(scalars))]), "not an object"
	case 4:
		return []byte([]string{"[]", "[ ]", "[\n]"}[g.rng.IntN(3)]), "empty array"
	case 5:
		return array([][]byte{array([][]byte{good()})}), "nested array"
	case 6:
		return []byte([]string{"[1,2,3]", `["join"]`, "[null]"}[g.rng.IntN(3)]), "array of non-objects"
	case 7:
		return append(good(), []string{"}", " x", ",{}", "{}"}[g.rng.IntN(4)]...), "trailing garbage"
	default:
		return append(good(), good()...), "two objects without an array"
	}
}

// breakEvent returns the fields of e with one rule of docs/DESIGN.md §2 broken, and
// what is wrong.
func (g *generator) breakEvent(e codec.Event) ([]field, string) {
	// Breakers of the value need a type that takes one.
	withValue := func() codec.Event {
		if e.Type == codec.TypeJoin || e.Type == codec.TypeLeave {
			e.Type, e.Value = codec.TypeVolume, g.rng.Int64N(codec.MaxVolume+1)
		}
		return e
	}
	as := func(t codec.Type) []field {
		e.Type = t
		e.Value = map[codec.Type]int64{codec.TypeAudio: 1, codec.TypeVideo: 0, codec.TypeVolume: 400, codec.TypeRole: int64(codec.RoleHost)}[t]
		return eventFields(e, false)
	}
	fs := eventFields(e, g.rng.IntN(4) == 0)
	pickStr := func(s ...string) string { return s[g.rng.IntN(len(s))] }
	idField := pickStr("room_id", "user_id")
	idName := strings.Replace(idField, "_", " ", 1)

	switch g.rng.IntN(22) {
	case 0:
		key := pickStr("room_id", "user_id", "type", "ts", "value")
		if key == "value" {
			fs = eventFields(withValue(), false)
		}
		return without(fs, key), "missing " + key
	case 1:
		key := pickStr("room_id", "user_id", "type", "ts")
		return with(fs, key, "null"), "null " + key
	case 2:
		return with(as(codec.TypeVolume), "value", pickStr("1000", "1023", "-1", "99999")), "volume out of range"
	case 3:
		t := []codec.Type{codec.TypeAudio, codec.TypeVideo, codec.TypeScreenShare, codec.TypeSpotlight}[g.rng.IntN(4)]
		return with(as(t), "value", pickStr("2", "-1", "10")), t.String() + " value out of range"
	case 4:
		return with(as(codec.TypeVolume), "value", pickStr("512.5", "5e2", "100.0", `"512"`, "true")), "volume not an integer"
	case 5:
		// Not a name rostrum could skip either: empty, too long, or
		// characters outside the id alphabet.
		return with(fs, "type", quote(pickStr("", "mute all", "kick!", "volume/2", strings.Repeat("t", 65)))), "unknown type"
	case 6:
		return with(fs, "type", pickStr("5", "true", `["volume"]`)), "type not a string"
	case 7:
		return with(as(codec.TypeRole), "value", quote(pickStr("admin", "Host", "teacher", "", "broadcast-control"))), "unknown role"
	case 8:
		return with(as(codec.TypeRole), "value", pickStr("4", "1", "null")), "role value not a name"
	case 9:
		t := []codec.Type{codec.TypeJoin, codec.TypeLeave}[g.rng.IntN(2)]
		return with(as(t), "value", pickStr("1", "0", `"in"`)), "value on " + t.String()
	case 10:
		bad := pickStr("r 1", "r/1", "r#1", "ré-1", "x\n", "a\x00b", "a,b", "😀")
		if idField == "user_id" {
			bad = strings.Replace(bad, "r", "u", 1)
		}
		return with(fs, idField, quote(bad)), "bad " + idName + " charset"
	case 11:
		return with(fs, idField, "\"u-\xff\""), "invalid utf-8 in " + idName
	case 12:
		return with(fs, idField, `""`), "empty " + idName
	case 13:
		return with(fs, idField, quote("u-"+strings.Repeat("x", 127))), idName + " too long"
	case 14:
		return with(fs, idField, pickStr("42", "true", `["r-1"]`)), idName + " not a string"
	case 15:
		return with(fs, "ts", quote(strconv.FormatInt(e.TS, 10))), "ts is a string"
	case 16:
		return with(fs, "ts", pickStr(strconv.FormatInt(e.TS, 10)+".0", "1.7637e12", strconv.FormatInt(e.TS, 10)+".5")), "ts not an integer"
	case 17:
		return with(fs, "ts", pickStr("0", "-1", "-1763700000000")), "ts not positive"
	case 18:
		return with(fs, "ts", strconv.FormatInt(4102444800000+g.rng.Int64N(1e9), 10)), "ts in the future" // 2100
	case 19:
		return with(fs, "source", quote(pickStr("email", "RTC", "sms", ""))), "unknown source"
	case 20:
		return with(fs, "source", pickStr("1", "true")), "source not a string"
	default:
		f := fs[g.rng.IntN(len(fs))]
		return append(fs, f), "duplicate field " + f.key
	}
}

// with returns fs with key's value set to raw, appending the field when fs
// lacks it.
func with(fs []field, key, raw string) []field {
	out := make([]field, 0, len(fs)+1)
	found := false
	for _, f := range fs {
		if f.key == key {
			f.raw, found = raw, true
		}
		out = append(out, f)
	}
	if !found {
		out = append(out, field{key, raw})
	}
	return out
}

// without returns fs without key.
func without(fs []field, key string) []field {
	out := make([]field, 0, len(fs))
	for _, f := range fs {
		if f.key != key {
			out = append(out, f)
		}
	}
	return out
}
