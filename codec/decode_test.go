package codec

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testNow is the decoder clock of the table tests (the same as FuzzDecode's).
var testNow = fuzzNow

// okEvent builds the JSON of a valid event with the given extra members
// appended after the standard ones.
func okEvent(extra string) string {
	s := `{"room_id":"r-1001","user_id":"u-42","type":"volume","value":512,"ts":1763700000123`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// withField builds an event object from the standard fields, with field
// name replaced by raw (JSON text) or, when raw is "", left out.
func withField(name, raw string) string {
	fields := []struct{ name, raw string }{
		{"room_id", `"r-1001"`}, {"user_id", `"u-42"`}, {"type", `"volume"`},
		{"value", `512`}, {"ts", `1763700000123`},
	}
	var b strings.Builder
	b.WriteByte('{')
	found := false
	for _, f := range fields {
		r := f.raw
		if f.name == name {
			found = true
			r = raw
		}
		if r == "" {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(f.name) + ":" + r)
	}
	if !found && raw != "" {
		b.WriteString("," + strconv.Quote(name) + ":" + raw)
	}
	b.WriteByte('}')
	return b.String()
}

// typed builds an event object of type typ with the given value member (JSON
// text, "" for none).
func typed(typ, value string) string {
	s := `{"room_id":"r","user_id":"u","type":"` + typ + `","ts":1`
	if value != "" {
		s += `,"value":` + value
	}
	return s + "}"
}

// want is an expected event of the table tests: room r-1001, user u-42,
// source rtc unless set.
func want(t Type, value, ts int64) Event {
	return Event{RoomID: "r-1001", UserID: "u-42", Type: t, Value: value, TS: ts, Source: SourceRTC}
}

func TestDecode(t *testing.T) {
	const ts = 1763700000123
	vol := want(TypeVolume, 512, ts)
	small := func(e Event) Event { e.RoomID, e.UserID, e.TS = "r", "u", 1; return e }
	long := strings.Repeat("a", 128)
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	manyFields := func(n int) string {
		var parts []string
		for i := range n - 5 {
			parts = append(parts, `"x`+strconv.Itoa(i)+`":0`)
		}
		return okEvent(strings.Join(parts, ","))
	}
	array := func(n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(okEvent("")+",", n), ",") + "]"
	}

	tests := []struct {
		name  string
		cfg   DecodeConfig
		value string
		want  []Event
		err   *DecodeError // nil: accepted
	}{
		// The record.
		{name: "single object", value: okEvent(""), want: []Event{vol}},
		{name: "array", value: "[" + okEvent("") + "," + withField("value", "7") + "]", want: []Event{vol, want(TypeVolume, 7, ts)}},
		{name: "whitespace everywhere", value: " \t\r\n[ \n{ \"room_id\" : \"r-1001\" ,\t\"user_id\":\"u-42\",\"type\":\"volume\",\"value\" : 512 , \"ts\":1763700000123 } ] \n", want: []Event{vol}},
		{name: "empty input", value: "", err: &DecodeError{-1, "json", "unexpected end of input at byte 0"}},
		{name: "only whitespace", value: " \n", err: &DecodeError{-1, "json", "unexpected end of input at byte 2"}},
		{name: "empty array", value: " [ ] ", err: &DecodeError{-1, "record", "empty array"}},
		{name: "scalar record", value: `"event"`, err: &DecodeError{-1, "record", "must be a JSON object or an array of objects"}},
		{name: "null record", value: `null`, err: &DecodeError{-1, "record", "must be a JSON object or an array of objects"}},
		{name: "array element not an object", value: "[" + okEvent("") + ",1]", err: &DecodeError{1, "", "must be a JSON object"}},
		{name: "nested array", value: "[[" + okEvent("") + "]]", err: &DecodeError{0, "", "must be a JSON object"}},
		{name: "trailing garbage", value: okEvent("") + " x", err: &DecodeError{-1, "json", "invalid character 'x' after top-level value at byte 85"}},
		{name: "two objects", value: okEvent("") + okEvent(""), err: &DecodeError{-1, "json", "invalid character '{' after top-level value at byte 84"}},
		{name: "truncated", value: okEvent("")[:20], err: &DecodeError{-1, "json", "unexpected end of input at byte 20"}},
		{name: "truncated array", value: "[" + okEvent(""), err: &DecodeError{-1, "json", "unexpected end of input at byte 85"}},
		{name: "trailing comma in array", value: "[" + okEvent("") + ",]", err: &DecodeError{-1, "json", "invalid character ']' looking for beginning of value at byte 86"}},
		{name: "trailing comma in object", value: strings.TrimSuffix(okEvent(""), "}") + ",}", err: &DecodeError{-1, "json", "invalid character '}' looking for beginning of object key string at byte 84"}},
		{name: "missing colon", value: `{"room_id" "r"}`, err: &DecodeError{-1, "json", "invalid character '\"' after object key at byte 11"}},
		{name: "missing comma", value: `{"room_id":"r" "user_id":"u"}`, err: &DecodeError{-1, "json", "invalid character '\"' after object key:value pair at byte 15"}},
		{name: "error index in array", value: "[" + okEvent("") + "," + withField("ts", "") + "]", err: &DecodeError{1, "ts", "required"}},
		{name: "record at size limit", cfg: DecodeConfig{MaxRecordBytes: len(okEvent(""))}, value: okEvent(""), want: []Event{vol}},
		{name: "record over size limit", cfg: DecodeConfig{MaxRecordBytes: len(okEvent("")) - 1}, value: okEvent(""), err: &DecodeError{-1, "record", "84 bytes exceeds limit 83"}},
		{name: "events at limit", cfg: DecodeConfig{MaxEvents: 3}, value: array(3), want: []Event{vol, vol, vol}},
		{name: "events over limit", cfg: DecodeConfig{MaxEvents: 3}, value: array(4), err: &DecodeError{-1, "record", "more than 3 events"}},

		// room_id and user_id.
		{name: "room_id all allowed characters", value: withField("room_id", `"AZaz09._:@-"`), want: []Event{{RoomID: "AZaz09._:@-", UserID: "u-42", Type: TypeVolume, Value: 512, TS: ts, Source: SourceRTC}}},
		{name: "room_id missing", value: withField("room_id", ""), err: &DecodeError{-1, "room_id", "required"}},
		{name: "room_id null", value: withField("room_id", "null"), err: &DecodeError{-1, "room_id", "required"}},
		{name: "room_id empty", value: withField("room_id", `""`), err: &DecodeError{-1, "room_id", "must be 1..128 bytes, got 0"}},
		{name: "room_id 128 bytes", value: withField("room_id", `"`+long+`"`), want: []Event{{RoomID: long, UserID: "u-42", Type: TypeVolume, Value: 512, TS: ts, Source: SourceRTC}}},
		{name: "room_id 129 bytes", value: withField("room_id", `"`+long+`a"`), err: &DecodeError{-1, "room_id", "must be 1..128 bytes, got 129"}},
		{name: "room_id NUL", value: withField("room_id", `"r-100\u0000"`), err: &DecodeError{-1, "room_id", `invalid character '\x00' at byte 5 (allowed [A-Za-z0-9._:@-])`}},
		{name: "room_id space", value: withField("room_id", `"r 1"`), err: &DecodeError{-1, "room_id", `invalid character ' ' at byte 1 (allowed [A-Za-z0-9._:@-])`}},
		{name: "room_id non-ASCII", value: withField("room_id", `"会议"`), err: &DecodeError{-1, "room_id", `invalid character '\xe4' at byte 0 (allowed [A-Za-z0-9._:@-])`}},
		{name: "room_id escaped", value: withField("room_id", `"r\u002d1001"`), want: []Event{vol}},
		{name: "room_id number", value: withField("room_id", `1001`), err: &DecodeError{-1, "room_id", "must be a string"}},
		{name: "user_id ok", value: withField("user_id", `"u:42@x"`), want: []Event{{RoomID: "r-1001", UserID: "u:42@x", Type: TypeVolume, Value: 512, TS: ts, Source: SourceRTC}}},
		{name: "user_id missing", value: withField("user_id", ""), err: &DecodeError{-1, "user_id", "required"}},
		{name: "user_id slash", value: withField("user_id", `"u\/42"`), err: &DecodeError{-1, "user_id", `invalid character '/' at byte 1 (allowed [A-Za-z0-9._:@-])`}},
		{name: "user_id object", value: withField("user_id", `{}`), err: &DecodeError{-1, "user_id", "must be a string"}},

		// type.
		{name: "type missing", value: withField("type", ""), err: &DecodeError{-1, "type", "required"}},
		{name: "screen_share on", value: `{"room_id":"r-1","user_id":"u-1","type":"screen_share","value":1,"ts":1763700000123}`,
			want: []Event{{RoomID: "r-1", UserID: "u-1", Type: TypeScreenShare, Value: 1, TS: 1763700000123, Source: SourceRTC}}},
		{name: "spotlight off", value: `{"room_id":"r-1","user_id":"u-1","type":"spotlight","value":0,"ts":1763700000123}`,
			want: []Event{{RoomID: "r-1", UserID: "u-1", Type: TypeSpotlight, Value: 0, TS: 1763700000123, Source: SourceRTC}}},
		{name: "screen_share 2", value: `{"room_id":"r-1","user_id":"u-1","type":"screen_share","value":2,"ts":1763700000123}`,
			err: &DecodeError{-1, "value", "screen_share must be 0..1, got 2"}},
		{name: "spotlight missing value", value: `{"room_id":"r-1","user_id":"u-1","type":"spotlight","ts":1763700000123}`,
			err: &DecodeError{-1, "value", "required for type spotlight"}},
		{name: "unknown type skipped", cfg: DecodeConfig{IgnoreUnknownTypes: true},
			value: `[{"room_id":"r-1","user_id":"u-1","type":"hand_raise","value":{"up":[true,null]},"ts":1763700000123},{"room_id":"r-1","user_id":"u-2","type":"audio","value":1,"ts":1763700000124}]`,
			want: []Event{{RoomID: "r-1", UserID: "u-1", Type: TypeIgnored, TypeName: "hand_raise", TS: 1763700000123, Source: SourceRTC},
				{RoomID: "r-1", UserID: "u-2", Type: TypeAudio, Value: 1, TS: 1763700000124, Source: SourceRTC}}},
		{name: "unknown type skipped still needs ts", cfg: DecodeConfig{IgnoreUnknownTypes: true},
			value: `{"room_id":"r-1","user_id":"u-1","type":"hand_raise"}`, err: &DecodeError{-1, "ts", "required"}},
		{name: "unknown type not a name", cfg: DecodeConfig{IgnoreUnknownTypes: true},
			value: withField("type", `"tip off"`), err: &DecodeError{-1, "type", `unknown type "tip off" (want join, leave, audio, video, volume, role, screen_share, spotlight, gift, score, received, read, passed, trade or remove)`}},
		{name: "known type with an object value, skipping", cfg: DecodeConfig{IgnoreUnknownTypes: true},
			value: `{"room_id":"r-1","user_id":"u-1","type":"audio","value":{"on":1},"ts":1763700000123}`,
			err:   &DecodeError{-1, "value", "must be an integer, a role name or null"}},
		{name: "type unknown", value: withField("type", `"tip"`), err: &DecodeError{-1, "type", `unknown type "tip" (want join, leave, audio, video, volume, role, screen_share, spotlight, gift, score, received, read, passed, trade or remove)`}},
		{name: "type case-sensitive", value: withField("type", `"VOLUME"`), err: &DecodeError{-1, "type", `unknown type "VOLUME" (want join, leave, audio, video, volume, role, screen_share, spotlight, gift, score, received, read, passed, trade or remove)`}},
		{name: "type number", value: withField("type", `5`), err: &DecodeError{-1, "type", "must be a string"}},
		{name: "type escaped", value: withField("type", `"vol\u0075me"`), want: []Event{vol}},

		// value, by type.
		{name: "join", value: typed("join", ""), want: []Event{small(Event{Type: TypeJoin, Source: SourceRTC})}},
		{name: "join value null", value: typed("join", "null"), want: []Event{small(Event{Type: TypeJoin, Source: SourceRTC})}},
		{name: "join with value", value: typed("join", "1"), err: &DecodeError{-1, "value", "must be absent for type join"}},
		{name: "leave", value: typed("leave", ""), want: []Event{small(Event{Type: TypeLeave, Source: SourceRTC})}},
		{name: "leave with value", value: typed("leave", `"x"`), err: &DecodeError{-1, "value", "must be absent for type leave"}},
		{name: "audio 0", value: typed("audio", "0"), want: []Event{small(Event{Type: TypeAudio, Value: 0, Source: SourceRTC})}},
		{name: "audio 1", value: typed("audio", "1"), want: []Event{small(Event{Type: TypeAudio, Value: 1, Source: SourceRTC})}},
		{name: "audio -0", value: typed("audio", "-0"), want: []Event{small(Event{Type: TypeAudio, Value: 0, Source: SourceRTC})}},
		{name: "audio 2", value: typed("audio", "2"), err: &DecodeError{-1, "value", "audio must be 0..1, got 2"}},
		{name: "audio -1", value: typed("audio", "-1"), err: &DecodeError{-1, "value", "audio must be 0..1, got -1"}},
		{name: "audio missing", value: typed("audio", ""), err: &DecodeError{-1, "value", "required for type audio"}},
		{name: "audio null", value: typed("audio", "null"), err: &DecodeError{-1, "value", "required for type audio"}},
		{name: "audio float", value: typed("audio", "1.0"), err: &DecodeError{-1, "value", "audio must be an integer, got 1.0"}},
		{name: "audio exponent", value: typed("audio", "1e0"), err: &DecodeError{-1, "value", "audio must be an integer, got 1e0"}},
		{name: "audio string", value: typed("audio", `"1"`), err: &DecodeError{-1, "value", "audio must be an integer, got a string"}},
		{name: "audio bool", value: typed("audio", "true"), err: &DecodeError{-1, "value", "must be an integer, a role name or null"}},
		{name: "video 1", value: typed("video", "1"), want: []Event{small(Event{Type: TypeVideo, Value: 1, Source: SourceRTC})}},
		{name: "video 3", value: typed("video", "3"), err: &DecodeError{-1, "value", "video must be 0..1, got 3"}},
		{name: "volume 0", value: typed("volume", "0"), want: []Event{small(Event{Type: TypeVolume, Value: 0, Source: SourceRTC})}},
		{name: "volume 999", value: typed("volume", "999"), want: []Event{small(Event{Type: TypeVolume, Value: 999, Source: SourceRTC})}},
		{name: "volume 1000", value: typed("volume", "1000"), err: &DecodeError{-1, "value", "volume must be 0..999, got 1000"}},
		{name: "volume huge", value: typed("volume", "123456789012345678901234567890123456789"), err: &DecodeError{-1, "value", "volume must be 0..999, got 12345678901234567890123456789012..."}},
		{name: "volume leading zero", value: typed("volume", "012"), err: &DecodeError{-1, "json", "invalid character '1' after object key:value pair at byte 61"}},
		{name: "role host", value: typed("role", `"host"`), want: []Event{small(Event{Type: TypeRole, Value: int64(RoleHost), Source: SourceRTC})}},
		{name: "role broadcast_control", value: typed("role", `"broadcast_control"`), want: []Event{small(Event{Type: TypeRole, Value: int64(RoleBroadcastControl), Source: SourceRTC})}},
		{name: "role unknown", value: typed("role", `"admin"`), err: &DecodeError{-1, "value", `unknown role "admin"`}},
		{name: "role number", value: typed("role", `4`), err: &DecodeError{-1, "value", "role must be a role name, got 4"}},
		{name: "role missing", value: typed("role", ""), err: &DecodeError{-1, "value", "required for type role"}},
		{name: "gift 1", value: typed("gift", "1"), want: []Event{small(Event{Type: TypeGift, Value: 1, Source: SourceRTC})}},
		{name: "gift max", value: typed("gift", "9007199254740991"), want: []Event{small(Event{Type: TypeGift, Value: MaxAmount, Source: SourceRTC})}},
		{name: "gift over max", value: typed("gift", "9007199254740992"), err: &DecodeError{-1, "value", "gift must be at most 9007199254740991 in magnitude (decimal places included), got 9007199254740992"}},
		{name: "gift 0", value: typed("gift", "0"), err: &DecodeError{-1, "value", "gift must not be 0"}},
		{name: "gift 0.000", value: typed("gift", "0.000"), err: &DecodeError{-1, "value", "gift must not be 0"}},
		{name: "gift refund", value: typed("gift", "-5"), want: []Event{small(Event{Type: TypeGift, Value: -5, Source: SourceRTC})}},
		{name: "gift min", value: typed("gift", "-9007199254740991"), want: []Event{small(Event{Type: TypeGift, Value: -MaxAmount, Source: SourceRTC})}},
		{name: "score decimal", value: typed("score", "12.5"), want: []Event{small(Event{Type: TypeScore, Value: 125, Decimals: 1, Source: SourceRTC})}},
		{name: "score trailing zeros", value: typed("score", "12.50"), want: []Event{small(Event{Type: TypeScore, Value: 125, Decimals: 1, Source: SourceRTC})}},
		{name: "score integral decimal", value: typed("score", "3.000"), want: []Event{small(Event{Type: TypeScore, Value: 3, Source: SourceRTC})}},
		{name: "score thousandths", value: typed("score", "-0.125"), want: []Event{small(Event{Type: TypeScore, Value: -125, Decimals: 3, Source: SourceRTC})}},
		{name: "score too fine", value: typed("score", "1.2345"), err: &DecodeError{-1, "value", "score has more than 3 decimal places, got 1.2345"}},
		{name: "score exponent", value: typed("score", "1e3"), err: &DecodeError{-1, "value", "score must be written without an exponent, got 1e3"}},
		{name: "score decimal over max", value: typed("score", "9007199254740.992"), err: &DecodeError{-1, "value", "score must be at most 9007199254740991 in magnitude (decimal places included), got 9007199254740.992"}},
		{name: "gift missing", value: typed("gift", ""), err: &DecodeError{-1, "value", "required for type gift"}},
		{name: "trade string", value: typed("trade", `"3"`), err: &DecodeError{-1, "value", "trade must be a number, got a string"}},
		{name: "trade 7", value: typed("trade", "7"), want: []Event{small(Event{Type: TypeTrade, Value: 7, Source: SourceRTC})}},
		{name: "received", value: typed("received", ""), want: []Event{small(Event{Type: TypeReceived, Source: SourceRTC})}},
		{name: "read", value: typed("read", "null"), want: []Event{small(Event{Type: TypeRead, Source: SourceRTC})}},
		{name: "passed with value", value: typed("passed", "1"), err: &DecodeError{-1, "value", "must be absent for type passed"}},
		{name: "value before type", value: `{"value":"cohost","room_id":"r","user_id":"u","ts":1,"type":"role"}`, want: []Event{small(Event{Type: TypeRole, Value: int64(RoleCohost), Source: SourceRTC})}},

		// ts.
		{name: "ts missing", value: withField("ts", ""), err: &DecodeError{-1, "ts", "required"}},
		{name: "ts null", value: withField("ts", "null"), err: &DecodeError{-1, "ts", "required"}},
		{name: "ts 1", value: withField("ts", "1"), want: []Event{want(TypeVolume, 512, 1)}},
		{name: "ts 0", value: withField("ts", "0"), err: &DecodeError{-1, "ts", "must be > 0, got 0"}},
		{name: "ts negative", value: withField("ts", "-5"), err: &DecodeError{-1, "ts", "must be > 0, got -5"}},
		{name: "ts float", value: withField("ts", "1763700000123.5"), err: &DecodeError{-1, "ts", "must be an integer (Unix milliseconds), got 1763700000123.5"}},
		{name: "ts string", value: withField("ts", `"1763700000123"`), err: &DecodeError{-1, "ts", "must be an integer (Unix milliseconds)"}},
		{name: "ts out of range", value: withField("ts", "9223372036854775808"), err: &DecodeError{-1, "ts", "out of range, got 9223372036854775808"}},
		{name: "ts at skew limit", value: withField("ts", "1763700300000"), want: []Event{want(TypeVolume, 512, 1763700300000)}},
		{name: "ts past skew limit", value: withField("ts", "1763700300001"), err: &DecodeError{-1, "ts", "1763700300001 is too far in the future (latest accepted 1763700300000)"}},
		{name: "ts custom skew", cfg: DecodeConfig{MaxFutureSkew: time.Second}, value: withField("ts", "1763700001001"), err: &DecodeError{-1, "ts", "1763700001001 is too far in the future (latest accepted 1763700001000)"}},

		// source.
		{name: "source client", value: okEvent(`"source":"client"`), want: []Event{{RoomID: "r-1001", UserID: "u-42", Type: TypeVolume, Value: 512, TS: ts, Source: SourceClient}}},
		{name: "source signal", value: okEvent(`"source":"signal"`), want: []Event{{RoomID: "r-1001", UserID: "u-42", Type: TypeVolume, Value: 512, TS: ts, Source: SourceSignal}}},
		{name: "source null", value: okEvent(`"source":null`), want: []Event{vol}},
		{name: "source unknown", value: okEvent(`"source":"kafka"`), err: &DecodeError{-1, "source", `unknown source "kafka" (want rtc, client or signal)`}},
		{name: "source number", value: okEvent(`"source":1`), err: &DecodeError{-1, "source", "must be a string"}},

		// Unknown fields, duplicates, nesting.
		{name: "id", value: okEvent(`"id":"evt-1"`), want: []Event{{RoomID: "r-1001", UserID: "u-42", Type: TypeVolume, Value: 512, TS: ts, Source: SourceRTC, ID: "evt-1"}}},
		{name: "id null", value: okEvent(`"id":null`), want: []Event{vol}},
		{name: "id empty", value: okEvent(`"id":""`), err: &DecodeError{-1, "id", "must be 1..128 bytes, got 0"}},
		{name: "id slash", value: okEvent(`"id":"a/b"`), err: &DecodeError{-1, "id", `invalid character '/' at byte 1 (allowed [A-Za-z0-9._:@-])`}},
		{name: "id number", value: okEvent(`"id":7`), err: &DecodeError{-1, "id", "must be a string"}},
		{name: "id duplicate", value: okEvent(`"id":"a","id":"b"`), err: &DecodeError{-1, "", `duplicate field "id"`}},
		{name: "unknown fields ignored", value: okEvent(`"meta":{"a":[1,-2.5e+3,true,false,null,"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"]},"Ts":"x"`), want: []Event{vol}},
		{name: "unknown field invalid JSON", value: okEvent(`"meta":[1,]`), err: &DecodeError{-1, "json", "invalid character ']' looking for beginning of value at byte 94"}},
		{name: "unknown field bad literal", value: okEvent(`"meta":nul`), err: &DecodeError{-1, "json", "invalid character '}' in literal null (expecting 'l') at byte 94"}},
		{name: "duplicate known field", value: okEvent(`"ts":1`), err: &DecodeError{-1, "", `duplicate field "ts"`}},
		{name: "duplicate known field escaped", value: okEvent(`"t\u0073":1`), err: &DecodeError{-1, "", `duplicate field "ts"`}},
		{name: "duplicate null field", value: `{"ts":null,` + okEvent("")[1:], err: &DecodeError{-1, "", `duplicate field "ts"`}},
		{name: "duplicate unknown field", value: okEvent(`"x":1,"y":2,"x":3`), err: &DecodeError{-1, "", `duplicate field "x"`}},
		{name: "duplicate unknown field escaped", value: okEvent(`"x\u00e9":1,"xé":3`), err: &DecodeError{-1, "", `duplicate field "xé"`}},
		{name: "lone surrogates are one name", value: okEvent(`"\ud800":1,"\udfff":3`), err: &DecodeError{-1, "", "duplicate field \"\uFFFD\""}},
		{name: "duplicate beyond the inline names", value: strings.TrimSuffix(manyFields(30), "}") + `,"x\u0032\u0033":1}`, err: &DecodeError{-1, "", `duplicate field "x23"`}},
		{name: "duplicates in two events", value: "[" + manyFields(20) + "," + manyFields(20) + "]", want: []Event{vol, vol}},
		{name: "64 fields", value: manyFields(64), want: []Event{vol}},
		{name: "65 fields", value: manyFields(65), err: &DecodeError{-1, "", "more than 64 fields"}},
		{name: "depth 32", value: okEvent(`"n":` + nest(31)), want: []Event{vol}},
		{name: "depth 33", value: okEvent(`"n":` + nest(32)), err: &DecodeError{-1, "json", "nesting deeper than 32 at byte 119"}},
		{name: "depth 32 in array", value: "[" + okEvent(`"n":`+nest(30)) + "]", want: []Event{vol}},
		{name: "depth 33 in array", value: "[" + okEvent(`"n":`+nest(31)) + "]", err: &DecodeError{-1, "json", "nesting deeper than 32 at byte 119"}},

		// Strings.
		{name: "invalid UTF-8", value: okEvent(`"x":"a` + "\xff" + `"`), err: &DecodeError{-1, "json", "invalid UTF-8 in string at byte 90"}},
		{name: "surrogate in UTF-8", value: okEvent(`"x":"` + "\xed\xa0\x80" + `"`), err: &DecodeError{-1, "json", "invalid UTF-8 in string at byte 89"}},
		{name: "control character", value: okEvent("\"x\":\"a\tb\""), err: &DecodeError{-1, "json", `invalid character '\t' in string literal at byte 90`}},
		{name: "bad escape", value: okEvent(`"x":"\x41"`), err: &DecodeError{-1, "json", `invalid character 'x' in string escape code at byte 90`}},
		{name: "bad unicode escape", value: okEvent(`"x":"\u00g0"`), err: &DecodeError{-1, "json", `invalid character 'g' in \u hexadecimal character escape at byte 93`}},
		{name: "bad escape in key", value: `{"\q":1}`, err: &DecodeError{-1, "json", `invalid character 'q' in string escape code at byte 3`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(tt.cfg)
			got, err := d.Decode(nil, []byte(tt.value), SourceRTC, testNow)
			if tt.err != nil {
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("Decode(%s) = %v, %v; want error %v", tt.value, got, err, tt.err)
				}
				if *de != *tt.err {
					t.Fatalf("Decode(%s) error\n got: %#v\nwant: %#v", tt.value, *de, *tt.err)
				}
				if len(got) != 0 {
					t.Fatalf("Decode returned %d events with an error", len(got))
				}
				// The reference decoder must agree on rejection.
				if _, refErr := refDecode(tt.cfg, []byte(tt.value), SourceRTC, testNow); refErr == nil {
					t.Fatalf("refDecode accepts %s", tt.value)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode(%s): %v", tt.value, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Decode(%s)\n got: %+v\nwant: %+v", tt.value, got, tt.want)
			}
			ref, refErr := refDecode(tt.cfg, []byte(tt.value), SourceRTC, testNow)
			if refErr != nil || !slices.Equal(ref, tt.want) {
				t.Fatalf("refDecode(%s) = %+v, %v", tt.value, ref, refErr)
			}
		})
	}
}

func TestDecodeErrorMessage(t *testing.T) {
	for _, tt := range []struct {
		err  DecodeError
		want string
	}{
		{DecodeError{3, "ts", "required"}, "event[3].ts: required"},
		{DecodeError{-1, "room_id", `invalid character '\x00' at byte 5 (allowed [A-Za-z0-9._:@-])`}, `room_id: invalid character '\x00' at byte 5 (allowed [A-Za-z0-9._:@-])`},
		{DecodeError{-1, "value", "volume must be 0..999, got 1000"}, "value: volume must be 0..999, got 1000"},
		{DecodeError{-1, "record", "2097152 bytes exceeds limit 1048576"}, "record: 2097152 bytes exceeds limit 1048576"},
		{DecodeError{-1, "json", "unexpected end of input at byte 17"}, "json: unexpected end of input at byte 17"},
		{DecodeError{2, "", `duplicate field "ts"`}, `event[2]: duplicate field "ts"`},
		{DecodeError{-1, "", `duplicate field "ts"`}, `event: duplicate field "ts"`},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestDecodeErrorIsOneLine checks that reasons quoting record bytes stay on
// one line, since they become a Kafka header.
func TestDecodeErrorIsOneLine(t *testing.T) {
	d := NewDecoder(DecodeConfig{})
	for _, v := range []string{
		typed("a\\nb", ""),
		withField("room_id", `"a\nb"`),
		typed("role", `"ho\r\nst"`),
		okEvent(`"x\n":1,"x\n":2`),
		withField("type", `"`+strings.Repeat("\\n", 100)+`"`),
	} {
		_, err := d.Decode(nil, []byte(v), SourceRTC, testNow)
		if err == nil || strings.ContainsAny(err.Error(), "\r\n") {
			t.Errorf("Decode(%s) error %q, want one line", v, err)
		}
	}
}

func TestDecodeKeepsDst(t *testing.T) {
	d := NewDecoder(DecodeConfig{})
	first := want(TypeJoin, 0, 1)
	dst := make([]Event, 1, 8)
	dst[0] = first

	// Success appends after what dst holds.
	got, err := d.Decode(dst, []byte("["+okEvent("")+","+okEvent("")+"]"), SourceClient, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != first || got[1].Source != SourceClient {
		t.Fatalf("got %+v", got)
	}

	// Failure on the third event: dst comes back as given, the spare
	// capacity written by the first two is zeroed, whether or not the
	// array outgrew it.
	for _, capacity := range []int{1, 2, 8} {
		dst := make([]Event, 1, capacity)
		dst[0] = first
		bad := "[" + okEvent("") + "," + okEvent("") + "," + withField("ts", "0") + "]"
		got, err := d.Decode(dst, []byte(bad), SourceRTC, testNow)
		var de *DecodeError
		if !errors.As(err, &de) || de.Index != 2 || de.Field != "ts" {
			t.Fatalf("cap %d: error %v, want event[2].ts", capacity, err)
		}
		if len(got) != 1 || &got[0] != &dst[0] || got[0] != first {
			t.Fatalf("cap %d: got %+v, want dst as given", capacity, got)
		}
		for i, e := range dst[1:cap(dst)] {
			if e != (Event{}) {
				t.Fatalf("cap %d: spare slot %d holds %+v", capacity, i+1, e)
			}
		}
	}
}

func TestDecodeTopicSource(t *testing.T) {
	d := NewDecoder(DecodeConfig{})
	for _, src := range []Source{SourceRTC, SourceClient, SourceSignal} {
		got, err := d.Decode(nil, []byte(okEvent("")), src, testNow)
		if err != nil || got[0].Source != src {
			t.Errorf("topic source %v: got %+v, %v", src, got, err)
		}
		got, err = d.Decode(nil, []byte(okEvent(`"source":"rtc"`)), src, testNow)
		if err != nil || got[0].Source != SourceRTC {
			t.Errorf("topic source %v, event source rtc: got %+v, %v", src, got, err)
		}
	}
}

// TestDecodeConcurrent runs one Decoder from several goroutines; run it
// with -race.
func TestDecodeConcurrent(t *testing.T) {
	d := NewDecoder(DecodeConfig{})
	value := []byte("[" + okEvent("") + "," + typed("role", `"host"`) + "]")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var dst []Event
			for range 200 {
				var err error
				dst, err = d.Decode(dst[:0], value, SourceRTC, testNow)
				if err != nil || len(dst) != 2 || dst[1].Value != int64(RoleHost) {
					t.Errorf("got %+v, %v", dst, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestDecodeAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("allocation counts differ under -cover")
	}
	d := NewDecoder(DecodeConfig{})
	for _, tt := range []struct {
		name   string
		value  string
		events int
	}{
		{"array of 20", benchArray(20), 20},
		{"escapes and unknown fields", `{"r\u006fom_id":"r\u002d1","user_id":"u\u003a1","type":"role","value":"h\u006fst","ts":1,` +
			`"x\u00e9":{"a":[1,"\ud83d\ude00"]},"xè":null,"y":true}`, 1},
	} {
		value := []byte(tt.value)
		dst := make([]Event, 0, tt.events)
		allocs := testing.AllocsPerRun(100, func() {
			var err error
			if dst, err = d.Decode(dst[:0], value, SourceRTC, testNow); err != nil {
				t.Fatal(err)
			}
		})
		// Two id strings per event, nothing else.
		if want := float64(2 * tt.events); allocs > want {
			t.Errorf("Decode of %s: %v allocations, want at most %v", tt.name, allocs, want)
		}
	}
}

func TestZeroDecoder(t *testing.T) {
	var d Decoder
	if got := d.Config(); got != (DecodeConfig{}).WithDefaults() {
		t.Errorf("zero Decoder config %+v, want the defaults", got)
	}
	got, err := d.Decode(nil, []byte(okEvent(`"x":1`)), SourceRTC, testNow)
	if err != nil || len(got) != 1 {
		t.Errorf("zero Decoder: %+v, %v", got, err)
	}
}

func TestDecodeConfig(t *testing.T) {
	got := DecodeConfig{}.WithDefaults()
	want := DecodeConfig{MaxRecordBytes: 1 << 20, MaxEvents: 10000, MaxFutureSkew: 5 * time.Minute}
	if got != want {
		t.Errorf("WithDefaults() = %+v, want %+v", got, want)
	}
	if got := (DecodeConfig{MaxRecordBytes: 1 << 40}).WithDefaults().MaxRecordBytes; got != 1<<30 {
		t.Errorf("MaxRecordBytes 1 TiB becomes %d, want 1 GiB", got)
	}
	custom := DecodeConfig{MaxRecordBytes: 10, MaxEvents: 2, MaxFutureSkew: time.Second}
	if got := NewDecoder(custom).Config(); got != custom {
		t.Errorf("Config() = %+v, want %+v", got, custom)
	}
	for _, c := range []DecodeConfig{{}, custom} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v.Validate() = %v", c, err)
		}
	}
	for _, c := range []DecodeConfig{{MaxRecordBytes: -1}, {MaxRecordBytes: 1<<30 + 1}, {MaxEvents: -1}, {MaxFutureSkew: -time.Second}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil, want an error", c)
		}
	}
}

func TestNames(t *testing.T) {
	for ty := TypeJoin; ty <= TypeTrade; ty++ {
		if ty.Board() != (ty >= TypeGift) {
			t.Errorf("%v.Board() = %v", ty, ty.Board())
		}
		if got, ok := ParseType(ty.String()); !ok || got != ty {
			t.Errorf("ParseType(%q) = %v, %v", ty.String(), got, ok)
		}
	}
	for r := RoleStudent; r <= RoleAssistant; r++ {
		if got, ok := ParseRole(r.String()); !ok || got != r {
			t.Errorf("ParseRole(%q) = %v, %v", r.String(), got, ok)
		}
		if r.Ranked() != (r <= RoleHost) {
			t.Errorf("%v.Ranked() = %v", r, r.Ranked())
		}
	}
	for s := SourceRTC; s <= SourceSignal; s++ {
		if got, ok := ParseSource(s.String()); !ok || got != s {
			t.Errorf("ParseSource(%q) = %v, %v", s.String(), got, ok)
		}
	}
	if Type(0).String() != "unknown" || Role(8).String() != "unknown" || Source(4).String() != "unknown" || Role(0).Ranked() {
		t.Error("invalid values must print as unknown and not rank")
	}
	for _, bad := range []string{"", "Join", "Gift", "tip"} {
		if _, ok := ParseType(bad); ok {
			t.Errorf("ParseType(%q) accepted", bad)
		}
	}
	if _, ok := ParseRole("Host"); ok {
		t.Error(`ParseRole("Host") accepted`)
	}
	if _, ok := ParseSource("kafka"); ok {
		t.Error(`ParseSource("kafka") accepted`)
	}
}
