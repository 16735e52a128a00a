package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzNow is the clock of FuzzDecode: 2025-11-21T04:40:00Z.
var fuzzNow = time.UnixMilli(1763700000000)

// fuzzSmall is a tight configuration, so that the fuzzer reaches every limit.
var fuzzSmall = DecodeConfig{MaxRecordBytes: 512, MaxEvents: 3, MaxFutureSkew: time.Second}

// FuzzDecode checks Decoder.Decode against these invariants, for any bytes:
//
//  1. It never panics.
//  2. It agrees with refDecode, an independent decoder built on
//     encoding/json that applies the same rules: both accept or both reject
//     the record, and when they accept they return identical events.
//  3. Every accepted event satisfies every rule of docs/DESIGN.md §2 (checked again
//     by checkEvent, without the decoder's code).
//  4. On error it returns dst with its length, contents and backing array as
//     given, zeroes the spare capacity it wrote, and the error is a
//     *DecodeError whose message is one non-empty line.
//
// small selects a configuration with tight limits (512 bytes, 3 events, 1s
// of skew) instead of the defaults; a value of odd length is decoded with
// IgnoreUnknownTypes.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"room_id":"r-1001","user_id":"u-42","type":"volume","value":512,"ts":1763700000123}`,
		`[{"room_id":"r","user_id":"u","type":"join","ts":1},{"room_id":"r","user_id":"u","type":"role","value":"host","ts":2,"source":"signal"}]`,
		`{"room_id":"r\u002d1","user_id":"u\/1","type":"audio","value":1,"ts":5,"extra":{"a":[1,2.5e3,true,false,null,"\ud83d\ude00"]}}`,
		`{"room_id":"r","user_id":"u","type":"leave","value":null,"ts":7,"x":1,"\u0078":2}`,
		`{"room_id":"r","user_id":"u","type":"video","value":1.0,"ts":7}`,
		`{"room_id":"r","user_id":"u","type":"role","value":"assistant","ts":9223372036854775807}`,
		` [ {"ts":1 , "type" : "volume","value":999,"user_id":"a:b@c.d_e","room_id":"Z9"} ] `,
		`{"room_id":"r","user_id":"u","type":"join","ts":1,"\ud800":1,"\ufffd":2}`,
		`{"room_id":"r","user_id":"u","type":"join","ts":1,"n":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`[]`, `{}`, `[{}]`, `null`, `"x"`, ``, `{"room_id":`,
		`{"room_id":"r","user_id":"u","type":"screen_share","value":1,"ts":3}`,
		`[{"room_id":"r","user_id":"u","type":"hand_raise","value":{"a":[1]},"ts":3},{"room_id":"r","user_id":"u","type":"spotlight","value":0,"ts":3}] `,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, value []byte, small bool) {
		cfg := DecodeConfig{}
		if small {
			cfg = fuzzSmall
		}
		cfg.IgnoreUnknownTypes = len(value)%2 == 1
		d := NewDecoder(cfg)
		source := Source(len(value)%3 + 1)

		// dst holds one event of the caller's and spare capacity.
		sentinel := Event{RoomID: "keep", UserID: "me", Type: TypeJoin, TS: 1, Source: SourceRTC}
		dst := make([]Event, 1, 3)
		dst[0] = sentinel
		got, err := d.Decode(dst, value, source, fuzzNow)
		want, refErr := refDecode(cfg, value, source, fuzzNow)

		if (err == nil) != (refErr == nil) {
			t.Fatalf("Decode and refDecode disagree on %q:\nDecode:    %v\nrefDecode: %v", value, err, refErr)
		}
		if got[0] != sentinel {
			t.Fatalf("dst[0] changed to %+v", got[0])
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is %T, want *DecodeError", err, err)
			}
			if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("error message %q is not one line", msg)
			}
			if len(got) != 1 || &got[0] != &dst[0] {
				t.Fatalf("on error got len %d (want 1) or a new backing array", len(got))
			}
			for i, e := range dst[1:cap(dst)] {
				if e != (Event{}) {
					t.Fatalf("spare slot %d not zeroed after error: %+v", i+1, e)
				}
			}
			return
		}
		got = got[1:]
		if len(got) != len(want) {
			t.Fatalf("Decode returned %d events, refDecode %d, for %q", len(got), len(want), value)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("event %d of %q:\nDecode:    %+v\nrefDecode: %+v", i, value, got[i], want[i])
			}
			if err := checkEvent(got[i], d.Config(), fuzzNow); err != nil {
				t.Fatalf("event %d of %q breaks a rule: %v (%+v)", i, value, err, got[i])
			}
		}
	})
}

// checkEvent re-checks the rules of an accepted event.
func checkEvent(e Event, cfg DecodeConfig, now time.Time) error {
	for _, id := range []string{e.RoomID, e.UserID} {
		if !refIDPattern.MatchString(id) {
			return fmt.Errorf("bad id %q", id)
		}
	}
	ok := false
	switch e.Type {
	case TypeJoin, TypeLeave:
		ok = e.Value == 0
	case TypeAudio, TypeVideo, TypeScreenShare, TypeSpotlight:
		ok = e.Value == 0 || e.Value == 1
	case TypeIgnored:
		ok = e.Value == 0 && refTypePattern.MatchString(e.TypeName)
	case TypeVolume:
		ok = e.Value >= 0 && e.Value <= 999
	case TypeRole:
		ok = e.Value >= int64(RoleStudent) && e.Value <= int64(RoleAssistant)
	}
	if !ok {
		return fmt.Errorf("type %d with value %d", e.Type, e.Value)
	}
	if e.TS <= 0 || time.UnixMilli(e.TS).After(now.Add(cfg.MaxFutureSkew)) {
		return fmt.Errorf("ts %d", e.TS)
	}
	if e.Source < SourceRTC || e.Source > SourceSignal {
		return fmt.Errorf("source %d", e.Source)
	}
	return nil
}

var (
	refIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,128}$`)
	// refTypePattern is a type name the decoder may skip.
	refTypePattern = regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,64}$`)
	refIntPattern  = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
)

// refDecode is the oracle of FuzzDecode: Decoder.Decode's contract written
// the slow, obvious way on encoding/json. It shares no code with decode.go
// except the exported name parsers of event.go.
func refDecode(cfg DecodeConfig, value []byte, source Source, now time.Time) ([]Event, error) {
	cfg = cfg.WithDefaults()
	if len(value) > cfg.MaxRecordBytes {
		return nil, errors.New("too large")
	}
	// encoding/json replaces invalid UTF-8 in strings; outside strings any
	// byte above 0x7f is a syntax error anyway.
	if !utf8.Valid(value) {
		return nil, errors.New("invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	maxTS := now.UnixMilli() + cfg.MaxFutureSkew.Milliseconds()
	var events []Event
	switch tok {
	case json.Delim('{'):
		e, err := refObject(dec, 1, source, maxTS, cfg.IgnoreUnknownTypes)
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	case json.Delim('['):
		for dec.More() {
			if len(events) == cfg.MaxEvents {
				return nil, errors.New("too many events")
			}
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			if tok != json.Delim('{') {
				return nil, fmt.Errorf("element %v is not an object", tok)
			}
			e, err := refObject(dec, 2, source, maxTS, cfg.IgnoreUnknownTypes)
			if err != nil {
				return nil, err
			}
			events = append(events, e)
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
			return nil, fmt.Errorf("array not closed: %v %v", tok, err)
		}
		if len(events) == 0 {
			return nil, errors.New("empty array")
		}
	default:
		return nil, fmt.Errorf("record starts with %v", tok)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("after the record: %v", err)
	}
	return events, nil
}

// refObject decodes the rest of an event object whose '{' dec has just
// returned. depth is the object's nesting depth in the record.
func refObject(dec *json.Decoder, depth int, source Source, maxTS int64, skipUnknown bool) (Event, error) {
	fields := map[string]json.RawMessage{}
	seen := map[string]bool{}
	for {
		tok, err := dec.Token()
		if err != nil {
			return Event{}, err
		}
		if tok == json.Delim('}') {
			break
		}
		key := tok.(string)
		if seen[key] {
			return Event{}, fmt.Errorf("duplicate %q", key)
		}
		seen[key] = true
		if len(seen) > 64 {
			return Event{}, errors.New("too many fields")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Event{}, err
		}
		raw = bytes.TrimSpace(raw)
		if depth+refNesting(raw) > 32 {
			return Event{}, errors.New("too deep")
		}
		if string(raw) != "null" {
			fields[key] = raw
		}
	}

	str := func(name string) (string, error) {
		raw, ok := fields[name]
		if !ok {
			return "", fmt.Errorf("%s missing", name)
		}
		var s string
		if raw[0] != '"' {
			return "", fmt.Errorf("%s not a string", name)
		}
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	integer := func(name string) (int64, error) {
		raw, ok := fields[name]
		if !ok || !refIntPattern.Match(raw) {
			return 0, fmt.Errorf("%s not an integer", name)
		}
		return strconv.ParseInt(string(raw), 10, 64)
	}

	var e Event
	var err error
	if e.RoomID, err = str("room_id"); err != nil || !refIDPattern.MatchString(e.RoomID) {
		return Event{}, fmt.Errorf("room_id %q: %v", e.RoomID, err)
	}
	if e.UserID, err = str("user_id"); err != nil || !refIDPattern.MatchString(e.UserID) {
		return Event{}, fmt.Errorf("user_id %q: %v", e.UserID, err)
	}
	typ, err := str("type")
	if err != nil {
		return Event{}, err
	}
	var ok bool
	if e.Type, ok = ParseType(typ); !ok {
		if !skipUnknown || !refTypePattern.MatchString(typ) {
			return Event{}, fmt.Errorf("type %q", typ)
		}
		e.Type, e.TypeName = TypeIgnored, typ
	}
	if e.TS, err = integer("ts"); err != nil || e.TS <= 0 || e.TS > maxTS {
		return Event{}, fmt.Errorf("ts %d: %v", e.TS, err)
	}
	if _, ok := fields["id"]; ok {
		if e.ID, err = str("id"); err != nil || !refIDPattern.MatchString(e.ID) {
			return Event{}, fmt.Errorf("id %q: %v", e.ID, err)
		}
	}
	_, hasBoard := fields["board"]
	_, hasSettled := fields["settled"]
	if e.Type == TypeRemove {
		if e.Board, err = str("board"); err != nil || !refBoardPattern.MatchString(e.Board) {
			return Event{}, fmt.Errorf("board %q: %v", e.Board, err)
		}
		if hasSettled {
			switch string(fields["settled"]) {
			case "true":
				e.Settled = true
			case "false":
			default:
				return Event{}, errors.New("settled not a boolean")
			}
		}
	} else if hasBoard || hasSettled {
		return Event{}, errors.New("board or settled on a type other than remove")
	}
	switch e.Type {
	case TypeJoin, TypeLeave, TypeReceived, TypeRead, TypePassed, TypeRemove:
		if _, ok := fields["value"]; ok {
			return Event{}, errors.New("value with a value-less type")
		}
	case TypeGift, TypeScore, TypeTrade:
		if e.Value, e.Decimals, err = refAmount(fields["value"]); err != nil {
			return Event{}, err
		}
	case TypeAudio, TypeVideo, TypeVolume, TypeScreenShare, TypeSpotlight:
		hi := int64(1)
		if e.Type == TypeVolume {
			hi = 999
		}
		if e.Value, err = integer("value"); err != nil || e.Value < 0 || e.Value > hi {
			return Event{}, fmt.Errorf("value %d: %v", e.Value, err)
		}
	case TypeRole:
		name, err := str("value")
		if err != nil {
			return Event{}, err
		}
		r, ok := ParseRole(name)
		if !ok {
			return Event{}, fmt.Errorf("role %q", name)
		}
		e.Value = int64(r)
	}
	e.Source = source
	if _, ok := fields["source"]; ok {
		name, err := str("source")
		if err != nil {
			return Event{}, err
		}
		if e.Source, ok = ParseSource(name); !ok {
			return Event{}, fmt.Errorf("source %q", name)
		}
	}
	return e, nil
}

var refBoardPattern = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// refAmount reads an amount the way docs/DESIGN.md §2 states it, with
// math/big: a JSON number without exponent, not 0, at most 3 decimal
// places after dropping trailing zeros, digits at most 2^53-1.
func refAmount(raw json.RawMessage) (int64, uint8, error) {
	lit := string(raw)
	if raw == nil || strings.ContainsAny(lit, "eE\"") {
		return 0, 0, fmt.Errorf("amount %q", lit)
	}
	r, ok := new(big.Rat).SetString(lit)
	if !ok || r.Sign() == 0 {
		return 0, 0, fmt.Errorf("amount %q", lit)
	}
	for d := uint8(0); d <= 3; d++ {
		scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d)), nil)))
		if scaled.IsInt() {
			n := scaled.Num()
			if n.CmpAbs(big.NewInt(MaxAmount)) > 0 {
				return 0, 0, fmt.Errorf("amount %q too large", lit)
			}
			return n.Int64(), d, nil
		}
	}
	return 0, 0, fmt.Errorf("amount %q too fine", lit)
}

// refNesting returns how many levels of arrays and objects the valid JSON
// value raw nests (0 for a scalar).
func refNesting(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
