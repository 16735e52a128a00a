package codec

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Defaults of DecodeConfig.
const (
	DefaultMaxRecordBytes = 1 << 20
	DefaultMaxEvents      = 10000
	DefaultMaxFutureSkew  = 5 * time.Minute
)

// Fixed limits of the decoder. They are not configurable because no valid
// callback event comes near them; they bound the work a hostile record can
// cause.
const (
	// maxDepth is the deepest nesting of arrays and objects in a record,
	// counting the record's own array and objects (so an ignored field of a
	// single-object record may nest 31 levels, one of an array record 30).
	maxDepth = 32
	// maxFields is the most members one event object may have, known and
	// unknown ones together. It bounds the duplicate check of unknown field
	// names, which compares each name's hash with the ones before it.
	maxFields = 64
	// inlineUnknown is how many unknown field names of an event are tracked
	// without allocating.
	inlineUnknown = 8
	// maxIDBytes is the longest room or user id.
	maxIDBytes = 128
	// maxRecordLimit caps MaxRecordBytes: offsets into a record are kept in
	// 32 bits.
	maxRecordLimit = 1 << 30
)

// DecodeConfig limits what Decode accepts. Zero fields take the defaults.
type DecodeConfig struct {
	// MaxRecordBytes is the largest record value accepted; a larger one is
	// rejected before it is parsed. Default: 1 MiB. At most 1 GiB.
	MaxRecordBytes int
	// MaxEvents is the most events in one JSON-array record. Default: 10000.
	MaxEvents int
	// MaxFutureSkew is how far an event's ts may be after the clock passed
	// to Decode, which allows for producers whose clocks run ahead.
	// Default: 5m. Applied at millisecond precision.
	MaxFutureSkew time.Duration
}

// WithDefaults returns c with every zero or negative field set to its
// default, and MaxRecordBytes capped at 1 GiB.
func (c DecodeConfig) WithDefaults() DecodeConfig {
	if c.MaxRecordBytes <= 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
	}
	c.MaxRecordBytes = min(c.MaxRecordBytes, maxRecordLimit)
	if c.MaxEvents <= 0 {
		c.MaxEvents = DefaultMaxEvents
	}
	if c.MaxFutureSkew <= 0 {
		c.MaxFutureSkew = DefaultMaxFutureSkew
	}
	return c
}

// Validate reports a field that is negative or beyond its cap, so that a
// bad setting is refused at start-up instead of being replaced by a default.
func (c DecodeConfig) Validate() error {
	switch {
	case c.MaxRecordBytes < 0 || c.MaxRecordBytes > maxRecordLimit:
		return fmt.Errorf("codec: max record bytes must be between 0 (default) and %d, got %d", maxRecordLimit, c.MaxRecordBytes)
	case c.MaxEvents < 0:
		return fmt.Errorf("codec: max events must be >= 0 (0: default), got %d", c.MaxEvents)
	case c.MaxFutureSkew < 0:
		return fmt.Errorf("codec: max future skew must be >= 0 (0: default), got %v", c.MaxFutureSkew)
	}
	return nil
}

// Decoder decodes callback record values (DESIGN §2) into Events.
//
// A record value is one JSON object or a non-empty JSON array of objects,
// UTF-8, at most MaxRecordBytes long. Each object must hold:
//
//	room_id, user_id  string, 1..128 bytes of [A-Za-z0-9._:@-]
//	type              meeting: "join", "leave", "audio", "video", "volume",
//	                  "role"; boards: "gift", "score", "received", "read",
//	                  "passed", "trade"
//	value             audio, video: integer 0 or 1; volume: integer 0..999;
//	                  role: a role name; gift, score, trade: integer
//	                  1..2^53-1; join, leave, received, read, passed: absent
//	id                optional: the producer's event id, 1..128 bytes of
//	                  [A-Za-z0-9._:@-]
//	ts                integer Unix milliseconds, > 0, at most MaxFutureSkew
//	                  after the clock passed to Decode
//	source            optional: "rtc", "client" or "signal"
//
// Decisions beyond DESIGN §2, made so that a record means one thing only:
//
//   - Integers are plain JSON integer literals: 1.0, 1e3, "1" and true are
//     rejected, whatever their value.
//   - A field set to null is treated as absent.
//   - Unknown fields are ignored, so that producers can add fields before
//     rostrum reads them. They must still be valid JSON, nested at most 32
//     levels deep in the whole record, and an event has at most 64 fields.
//   - A field name may appear once per event; a duplicate, known or not, is
//     rejected (two readers could otherwise see two different events).
//     Names are compared after JSON unescaping and are case-sensitive.
//   - Strings must be valid UTF-8. Escapes are decoded as encoding/json
//     does: a lone surrogate \uD800 becomes U+FFFD.
//   - Nothing but JSON whitespace may follow the record's value.
//
// A Decoder is immutable and safe for concurrent use. The zero Decoder
// applies the default limits.
type Decoder struct {
	cfg DecodeConfig
}

// NewDecoder returns a Decoder with cfg's limits; zero fields take the
// defaults (see DecodeConfig.WithDefaults).
func NewDecoder(cfg DecodeConfig) *Decoder {
	return &Decoder{cfg: cfg.WithDefaults()}
}

// Config returns the limits d applies, defaults filled in.
func (d *Decoder) Config() DecodeConfig { return d.cfg.WithDefaults() }

// Decode appends the events of one record value to dst and returns the
// extended slice. source is the topic's source, used for events without a
// source field. now is the wall clock for the future-skew check of ts.
//
// A record is accepted whole or rejected whole: on error Decode returns dst
// with its length as given and a *DecodeError; slots of dst's spare capacity
// it wrote are zeroed again. Decode allocates the two id strings of each
// event and dst's growth, nothing else, unless it rejects the record (the
// error), meets an event with more than 8 unknown fields (once per record)
// or escaped unknown field names longer than 64 bytes.
func (d *Decoder) Decode(dst []Event, value []byte, source Source, now time.Time) ([]Event, error) {
	cfg := d.cfg.WithDefaults() // a no-op but for the zero Decoder
	if len(value) > cfg.MaxRecordBytes {
		return dst, &DecodeError{Index: -1, Field: "record",
			Rule: fmt.Sprintf("%d bytes exceeds limit %d", len(value), cfg.MaxRecordBytes)}
	}
	n0 := len(dst)
	s := jsonScanner{
		buf:       value,
		idx:       -1,
		maxTS:     now.UnixMilli() + cfg.MaxFutureSkew.Milliseconds(),
		source:    source,
		maxEvents: cfg.MaxEvents,
	}
	out, err := s.record(dst)
	if err != nil {
		// Drop the references to the id strings of the rejected record.
		clear(out[n0:])
		if len(out) > n0 && cap(dst) > n0 {
			clear(dst[n0:min(len(out), cap(dst))])
		}
		return dst[:n0], err
	}
	return out, nil
}

// DecodeError says why a record was rejected. Its Error is a one-line reason
// meant for the DLQ's rostrum-error header, naming the field and the rule:
//
//	event[3].ts: required
//	room_id: invalid character '\x00' at byte 5 (allowed [A-Za-z0-9._:@-])
//	value: volume must be 0..999, got 1000
//	record: 2097152 bytes exceeds limit 1048576
//	json: unexpected end of input at byte 17
type DecodeError struct {
	// Index is the event's index in an array record; -1 for a single-object
	// record and for errors of the whole record (Field "record" or "json").
	Index int
	// Field is the JSON field that broke a rule ("room_id", "ts", ...),
	// "record" for a rule of the whole record, "json" for a syntax error, or
	// "" for a rule of the event object as a whole.
	Field string
	// Rule is the rule broken, in a few words.
	Rule string
}

// Error returns the reason on one line: "event[i].field: rule" for an event
// of an array record, "field: rule" otherwise.
func (e *DecodeError) Error() string {
	switch {
	case e.Index >= 0 && e.Field != "":
		return "event[" + strconv.Itoa(e.Index) + "]." + e.Field + ": " + e.Rule
	case e.Index >= 0:
		return "event[" + strconv.Itoa(e.Index) + "]: " + e.Rule
	case e.Field != "":
		return e.Field + ": " + e.Rule
	}
	return "event: " + e.Rule
}

// Bits of the known fields of an event object.
const (
	bitRoomID = 1 << iota
	bitUserID
	bitType
	bitValue
	bitTS
	bitSource
	bitID
)

// maxEscapedKnown is the longest a known field name can be in the record:
// its 7 bytes each escaped as \uXXXX. A longer escaped name is unknown
// without decoding it.
const maxEscapedKnown = 6 * len("room_id")

// knownField returns the bit of the known field named k, or 0.
func knownField(k []byte) uint8 {
	switch string(k) {
	case "room_id":
		return bitRoomID
	case "user_id":
		return bitUserID
	case "type":
		return bitType
	case "value":
		return bitValue
	case "ts":
		return bitTS
	case "source":
		return bitSource
	case "id":
		return bitID
	}
	return 0
}

// knownName returns the JSON name of the known field bit f.
func knownName(f uint8) string {
	switch f {
	case bitRoomID:
		return "room_id"
	case bitUserID:
		return "user_id"
	case bitType:
		return "type"
	case bitValue:
		return "value"
	case bitTS:
		return "ts"
	case bitID:
		return "id"
	}
	return "source"
}

// The kinds of JSON value held by a value field until the type is known.
const (
	valueNone   = iota // absent or null
	valueInt           // integer literal
	valueNumber        // number with a fraction or exponent
	valueString        // string
)

// strRef is the content of a JSON string in the record: buf[start:end],
// without its quotes; esc says whether it holds escapes.
type strRef struct {
	start, end uint32
	esc        bool
}

// nameRef is an unknown field name and the hash of its decoded text.
type nameRef struct {
	strRef
	hash uint64
}

// nameSeed seeds the hashes of unknown field names. It is random per
// process so that no record can be built to make many names collide.
var nameSeed = maphash.MakeSeed()

// jsonScanner is the state of one Decode call: a single forward pass over
// buf with no backtracking. Its methods leave pos after what they consumed.
type jsonScanner struct {
	buf       []byte
	pos       int
	idx       int   // index of the event being decoded; -1 in a single-object record
	maxTS     int64 // latest ts accepted, Unix ms
	source    Source
	maxEvents int

	// Per event object.
	valKind  uint8
	valRef   strRef // value field's bytes (string content, or number literal)
	nUnknown int    // unknown field names seen: in inline, then in more
	inline   [inlineUnknown]nameRef
	more     []nameRef // reused by the objects of one record
}

// record decodes the whole record value.
func (s *jsonScanner) record(dst []Event) ([]Event, *DecodeError) {
	s.skipSpace()
	if s.pos >= len(s.buf) {
		return dst, s.syntaxErr("unexpected end of input")
	}
	switch s.buf[s.pos] {
	case '{':
		dst = append(dst, Event{})
		if err := s.object(&dst[len(dst)-1], 1); err != nil {
			return dst, err
		}
	case '[':
		s.pos++
		s.skipSpace()
		if s.pos < len(s.buf) && s.buf[s.pos] == ']' {
			return dst, &DecodeError{Index: -1, Field: "record", Rule: "empty array"}
		}
		for i := 0; ; i++ {
			if i == s.maxEvents {
				return dst, &DecodeError{Index: -1, Field: "record", Rule: "more than " + strconv.Itoa(s.maxEvents) + " events"}
			}
			s.idx = i
			if s.pos >= len(s.buf) {
				return dst, s.syntaxErr("unexpected end of input")
			}
			if s.buf[s.pos] != '{' {
				if !isValueStart(s.buf[s.pos]) {
					return dst, s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " looking for beginning of value")
				}
				return dst, s.eventErr("", "must be a JSON object")
			}
			dst = append(dst, Event{})
			if err := s.object(&dst[len(dst)-1], 2); err != nil {
				return dst, err
			}
			s.skipSpace()
			if s.pos >= len(s.buf) {
				return dst, s.syntaxErr("unexpected end of input")
			}
			c := s.buf[s.pos]
			s.pos++
			if c == ']' {
				break
			}
			if c != ',' {
				s.pos--
				return dst, s.syntaxErr("invalid character " + quoteByte(c) + " after array element")
			}
			s.skipSpace()
		}
	default:
		if !isValueStart(s.buf[s.pos]) {
			return dst, s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " looking for beginning of value")
		}
		return dst, &DecodeError{Index: -1, Field: "record", Rule: "must be a JSON object or an array of objects"}
	}
	s.skipSpace()
	if s.pos < len(s.buf) {
		return dst, s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " after top-level value")
	}
	return dst, nil
}

// object decodes the event object at s.pos into ev and checks every rule.
// depth is the object's nesting depth in the record.
func (s *jsonScanner) object(ev *Event, depth int) *DecodeError {
	s.pos++ // '{'
	s.valKind = valueNone
	s.nUnknown = 0
	var seen, have uint8 // fields seen; fields seen with a non-null value
	fields := 0
	s.skipSpace()
	if s.pos < len(s.buf) && s.buf[s.pos] == '}' {
		s.pos++
	} else {
		for {
			if s.pos >= len(s.buf) {
				return s.syntaxErr("unexpected end of input")
			}
			if s.buf[s.pos] != '"' {
				return s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " looking for beginning of object key string")
			}
			key, err := s.str()
			if err != nil {
				return err
			}
			if fields++; fields > maxFields {
				return s.eventErr("", "more than "+strconv.Itoa(maxFields)+" fields")
			}
			s.skipSpace()
			if s.pos >= len(s.buf) {
				return s.syntaxErr("unexpected end of input")
			}
			if s.buf[s.pos] != ':' {
				return s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " after object key")
			}
			s.pos++
			s.skipSpace()
			if s.pos >= len(s.buf) {
				return s.syntaxErr("unexpected end of input")
			}

			var f uint8
			if !key.esc {
				f = knownField(s.buf[key.start:key.end])
			} else if int(key.end-key.start) <= maxEscapedKnown {
				var scratch [maxEscapedKnown]byte
				f = knownField(appendUnquoted(scratch[:0], s.buf[key.start:key.end]))
			}
			if f == 0 {
				if err := s.unknownField(key, depth); err != nil {
					return err
				}
			} else {
				if seen&f != 0 {
					return s.eventErr("", "duplicate field "+strconv.Quote(knownName(f)))
				}
				seen |= f
				isNull, err := s.knownValue(ev, f)
				if err != nil {
					return err
				}
				if !isNull {
					have |= f
				}
			}

			s.skipSpace()
			if s.pos >= len(s.buf) {
				return s.syntaxErr("unexpected end of input")
			}
			c := s.buf[s.pos]
			s.pos++
			if c == '}' {
				break
			}
			if c != ',' {
				s.pos--
				return s.syntaxErr("invalid character " + quoteByte(c) + " after object key:value pair")
			}
			s.skipSpace()
		}
	}

	// Rules that need the whole object.
	switch {
	case have&bitRoomID == 0:
		return s.eventErr("room_id", "required")
	case have&bitUserID == 0:
		return s.eventErr("user_id", "required")
	case have&bitType == 0:
		return s.eventErr("type", "required")
	case have&bitTS == 0:
		return s.eventErr("ts", "required")
	}
	if have&bitSource == 0 {
		ev.Source = s.source
	}
	return s.checkValue(ev)
}

// unknownField checks that the name of an unknown field is not a duplicate,
// then validates and skips its value. Names are compared by hash first, so
// the check costs one pass over each name whatever the record holds.
func (s *jsonScanner) unknownField(key strRef, depth int) *DecodeError {
	ref := nameRef{strRef: key}
	if !key.esc {
		ref.hash = maphash.Bytes(nameSeed, s.buf[key.start:key.end])
	} else {
		var scratch [64]byte
		ref.hash = maphash.Bytes(nameSeed, appendUnquoted(scratch[:0], s.buf[key.start:key.end]))
	}
	for i := range s.nUnknown {
		prev := s.unknownName(i)
		if prev.hash == ref.hash && sameName(s.buf, prev.strRef, key) {
			name := s.buf[key.start:key.end]
			if key.esc {
				name = appendUnquoted(nil, name)
			}
			return s.eventErr("", "duplicate field "+quoteTrunc(name))
		}
	}
	if s.nUnknown < inlineUnknown {
		s.inline[s.nUnknown] = ref
	} else {
		s.more = append(s.more[:s.nUnknown-inlineUnknown], ref)
	}
	s.nUnknown++
	return s.skipValue(depth)
}

// unknownName returns the i-th unknown field name of the current object.
func (s *jsonScanner) unknownName(i int) nameRef {
	if i < inlineUnknown {
		return s.inline[i]
	}
	return s.more[i-inlineUnknown]
}

// sameName reports whether two JSON strings of buf decode to the same text.
func sameName(buf []byte, a, b strRef) bool {
	x, y := buf[a.start:a.end], buf[b.start:b.end]
	if !a.esc && !b.esc {
		return bytes.Equal(x, y)
	}
	var sa, sb [64]byte
	return bytes.Equal(appendUnquoted(sa[:0], x), appendUnquoted(sb[:0], y))
}

// knownValue decodes the value of known field f. It reports whether the
// value was null.
func (s *jsonScanner) knownValue(ev *Event, f uint8) (bool, *DecodeError) {
	c := s.buf[s.pos]
	if c == 'n' {
		return true, s.literal("null")
	}
	switch f {
	case bitRoomID:
		return false, s.id(&ev.RoomID, "room_id")
	case bitUserID:
		return false, s.id(&ev.UserID, "user_id")
	case bitID:
		return false, s.id(&ev.ID, "id")
	case bitType:
		var scratch [16]byte
		name, err := s.enumName("type", scratch[:0])
		if err != nil {
			return false, err
		}
		t, ok := parseType(name)
		if !ok {
			return false, s.eventErr("type", "unknown type "+quoteTrunc(name)+" (want join, leave, audio, video, volume, role, gift, score, received, read, passed or trade)")
		}
		ev.Type = t
	case bitValue:
		switch {
		case c == '"':
			ref, err := s.str()
			if err != nil {
				return false, err
			}
			s.valKind, s.valRef = valueString, ref
		case c == '-' || isDigit(c):
			ref, isInt, err := s.number()
			if err != nil {
				return false, err
			}
			s.valKind, s.valRef = valueNumber, ref
			if isInt {
				s.valKind = valueInt
			}
		default:
			if !isValueStart(c) {
				return false, s.syntaxErr("invalid character " + quoteByte(c) + " looking for beginning of value")
			}
			return false, s.eventErr("value", "must be an integer, a role name or null")
		}
	case bitTS:
		if c != '-' && !isDigit(c) {
			if !isValueStart(c) {
				return false, s.syntaxErr("invalid character " + quoteByte(c) + " looking for beginning of value")
			}
			return false, s.eventErr("ts", "must be an integer (Unix milliseconds)")
		}
		ref, isInt, err := s.number()
		if err != nil {
			return false, err
		}
		lit := s.buf[ref.start:ref.end]
		if !isInt {
			return false, s.eventErr("ts", "must be an integer (Unix milliseconds), got "+numTrunc(lit))
		}
		ts, ok := parseInt(lit)
		switch {
		case !ok:
			return false, s.eventErr("ts", "out of range, got "+numTrunc(lit))
		case ts <= 0:
			return false, s.eventErr("ts", "must be > 0, got "+strconv.FormatInt(ts, 10))
		case ts > s.maxTS:
			return false, s.eventErr("ts", strconv.FormatInt(ts, 10)+" is too far in the future (latest accepted "+strconv.FormatInt(s.maxTS, 10)+")")
		}
		ev.TS = ts
	case bitSource:
		var scratch [16]byte
		name, err := s.enumName("source", scratch[:0])
		if err != nil {
			return false, err
		}
		src, ok := parseSource(name)
		if !ok {
			return false, s.eventErr("source", "unknown source "+quoteTrunc(name)+" (want rtc, client or signal)")
		}
		ev.Source = src
	}
	return false, nil
}

// checkValue applies the value rule of ev.Type to the value field seen.
func (s *jsonScanner) checkValue(ev *Event) *DecodeError {
	lit := s.buf[s.valRef.start:s.valRef.end]
	switch ev.Type {
	case TypeJoin, TypeLeave, TypeReceived, TypeRead, TypePassed:
		if s.valKind != valueNone {
			return s.eventErr("value", "must be absent for type "+ev.Type.String())
		}
		return nil
	case TypeGift, TypeScore, TypeTrade:
		return s.intValue(ev, 1, MaxAmount)
	case TypeAudio, TypeVideo:
		return s.intValue(ev, 0, 1)
	case TypeVolume:
		return s.intValue(ev, 0, 999)
	}
	// TypeRole
	if s.valKind != valueString {
		if s.valKind == valueNone {
			return s.eventErr("value", "required for type role")
		}
		return s.eventErr("value", "role must be a role name, got "+numTrunc(lit))
	}
	var scratch [24]byte
	name := s.unquote(scratch[:0], s.valRef)
	r, ok := parseRole(name)
	if !ok {
		return s.eventErr("value", "unknown role "+quoteTrunc(name))
	}
	ev.Value = int64(r)
	return nil
}

// intValue checks that the value field seen is an integer in lo..hi and
// stores it in ev.Value.
func (s *jsonScanner) intValue(ev *Event, lo, hi int64) *DecodeError {
	lit := s.buf[s.valRef.start:s.valRef.end]
	switch s.valKind {
	case valueNone:
		return s.eventErr("value", "required for type "+ev.Type.String())
	case valueInt:
		if v, ok := parseInt(lit); ok && v >= lo && v <= hi {
			ev.Value = v
			return nil
		}
		return s.eventErr("value", ev.Type.String()+" must be "+strconv.FormatInt(lo, 10)+".."+strconv.FormatInt(hi, 10)+", got "+numTrunc(lit))
	case valueNumber:
		return s.eventErr("value", ev.Type.String()+" must be an integer, got "+numTrunc(lit))
	}
	return s.eventErr("value", ev.Type.String()+" must be an integer, got a string")
}

// id decodes a room or user id into dst.
func (s *jsonScanner) id(dst *string, field string) *DecodeError {
	buf := s.buf
	if buf[s.pos] != '"' {
		return s.notString(field)
	}
	// Fast path: plain id characters up to the closing quote, which is also
	// a valid JSON string with nothing to unescape.
	start := s.pos + 1
	i := start
	for i < len(buf) && idByte[buf[i]] {
		i++
	}
	if i < len(buf) && buf[i] == '"' && i-start >= 1 && i-start <= maxIDBytes {
		*dst = string(buf[start:i])
		s.pos = i + 1
		return nil
	}
	ref, err := s.str()
	if err != nil {
		return err
	}
	var scratch [maxIDBytes]byte
	b := s.unquote(scratch[:0], ref)
	if len(b) < 1 || len(b) > maxIDBytes {
		return s.eventErr(field, "must be 1.."+strconv.Itoa(maxIDBytes)+" bytes, got "+strconv.Itoa(len(b)))
	}
	for j, c := range b {
		if !idByte[c] {
			return s.eventErr(field, "invalid character "+quoteByte(c)+" at byte "+strconv.Itoa(j)+" (allowed [A-Za-z0-9._:@-])")
		}
	}
	*dst = string(b)
	return nil
}

// unquote returns the text of string ref: its bytes in the record when it
// has no escapes, else the decoded text appended to scratch.
// enumName reads the string value of a name-valued field (type, source),
// unquoted into scratch.
func (s *jsonScanner) enumName(field string, scratch []byte) ([]byte, *DecodeError) {
	if s.buf[s.pos] != '"' {
		return nil, s.notString(field)
	}
	ref, err := s.str()
	if err != nil {
		return nil, err
	}
	return s.unquote(scratch, ref), nil
}

func (s *jsonScanner) unquote(scratch []byte, ref strRef) []byte {
	raw := s.buf[ref.start:ref.end]
	if !ref.esc {
		return raw
	}
	return appendUnquoted(scratch, raw)
}

// str validates the JSON string at s.pos (its opening quote) and returns
// its content.
func (s *jsonScanner) str() (strRef, *DecodeError) {
	buf := s.buf
	start := s.pos + 1
	esc := false
	i := start
	for {
		// The common case: a run of printable ASCII.
		for i < len(buf) && strPlain[buf[i]] {
			i++
		}
		if i >= len(buf) {
			s.pos = i
			return strRef{}, s.syntaxErr("unexpected end of input")
		}
		switch c := buf[i]; {
		case c == '"':
			s.pos = i + 1
			return strRef{start: uint32(start), end: uint32(i), esc: esc}, nil
		case c == '\\':
			esc = true
			if i+1 >= len(buf) {
				s.pos = len(buf)
				return strRef{}, s.syntaxErr("unexpected end of input")
			}
			switch buf[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(buf) {
						s.pos = len(buf)
						return strRef{}, s.syntaxErr("unexpected end of input")
					}
					if hexVal(buf[j]) < 0 {
						s.pos = j
						return strRef{}, s.syntaxErr("invalid character " + quoteByte(buf[j]) + " in \\u hexadecimal character escape")
					}
				}
				i += 6
			default:
				s.pos = i + 1
				return strRef{}, s.syntaxErr("invalid character " + quoteByte(buf[i+1]) + " in string escape code")
			}
		case c < 0x20:
			s.pos = i
			return strRef{}, s.syntaxErr("invalid character " + quoteByte(c) + " in string literal")
		default: // c >= 0x80
			r, size := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && size == 1 {
				s.pos = i
				return strRef{}, s.syntaxErr("invalid UTF-8 in string")
			}
			i += size
		}
	}
}

// number validates the JSON number at s.pos and returns its literal and
// whether it is a plain integer (no fraction, no exponent).
func (s *jsonScanner) number() (strRef, bool, *DecodeError) {
	buf := s.buf
	start := s.pos
	i := start
	if buf[i] == '-' {
		i++
	}
	switch {
	case i >= len(buf):
		s.pos = i
		return strRef{}, false, s.syntaxErr("unexpected end of input")
	case buf[i] == '0':
		i++
	case isDigit(buf[i]):
		for i < len(buf) && isDigit(buf[i]) {
			i++
		}
	default:
		s.pos = i
		return strRef{}, false, s.syntaxErr("invalid character " + quoteByte(buf[i]) + " in numeric literal")
	}
	isInt := true
	if i < len(buf) && buf[i] == '.' {
		isInt = false
		i++
		if i >= len(buf) || !isDigit(buf[i]) {
			s.pos = i
			return strRef{}, false, s.syntaxErrAt("after decimal point in numeric literal")
		}
		for i < len(buf) && isDigit(buf[i]) {
			i++
		}
	}
	if i < len(buf) && (buf[i] == 'e' || buf[i] == 'E') {
		isInt = false
		i++
		if i < len(buf) && (buf[i] == '+' || buf[i] == '-') {
			i++
		}
		if i >= len(buf) || !isDigit(buf[i]) {
			s.pos = i
			return strRef{}, false, s.syntaxErrAt("in exponent of numeric literal")
		}
		for i < len(buf) && isDigit(buf[i]) {
			i++
		}
	}
	s.pos = i
	return strRef{start: uint32(start), end: uint32(i)}, isInt, nil
}

// literal consumes the literal word (true, false or null) at s.pos.
func (s *jsonScanner) literal(word string) *DecodeError {
	for j := 0; j < len(word); j++ {
		if s.pos >= len(s.buf) {
			return s.syntaxErr("unexpected end of input")
		}
		if s.buf[s.pos] != word[j] {
			return s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " in literal " + word + " (expecting " + quoteByte(word[j]) + ")")
		}
		s.pos++
	}
	return nil
}

// skipValue validates and skips the value at s.pos, the value of an
// unknown field. depth is the depth of the container holding it.
func (s *jsonScanner) skipValue(depth int) *DecodeError {
	if s.pos >= len(s.buf) {
		return s.syntaxErr("unexpected end of input")
	}
	switch c := s.buf[s.pos]; {
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || isDigit(c):
		_, _, err := s.number()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '{' || c == '[':
		if depth+1 > maxDepth {
			return s.syntaxErr("nesting deeper than " + strconv.Itoa(maxDepth))
		}
		return s.skipContainer(depth + 1)
	default:
		return s.syntaxErr("invalid character " + quoteByte(c) + " looking for beginning of value")
	}
}

// skipContainer validates and skips the object or array at s.pos, which is
// at the given depth.
func (s *jsonScanner) skipContainer(depth int) *DecodeError {
	isObject := s.buf[s.pos] == '{'
	end := byte(']')
	if isObject {
		end = '}'
	}
	s.pos++
	s.skipSpace()
	if s.pos < len(s.buf) && s.buf[s.pos] == end {
		s.pos++
		return nil
	}
	for {
		if isObject {
			if s.pos >= len(s.buf) {
				return s.syntaxErr("unexpected end of input")
			}
			if s.buf[s.pos] != '"' {
				return s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " looking for beginning of object key string")
			}
			if _, err := s.str(); err != nil {
				return err
			}
			s.skipSpace()
			if s.pos >= len(s.buf) {
				return s.syntaxErr("unexpected end of input")
			}
			if s.buf[s.pos] != ':' {
				return s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " after object key")
			}
			s.pos++
			s.skipSpace()
		}
		if err := s.skipValue(depth); err != nil {
			return err
		}
		s.skipSpace()
		if s.pos >= len(s.buf) {
			return s.syntaxErr("unexpected end of input")
		}
		c := s.buf[s.pos]
		s.pos++
		if c == end {
			return nil
		}
		if c != ',' {
			s.pos--
			if isObject {
				return s.syntaxErr("invalid character " + quoteByte(c) + " after object key:value pair")
			}
			return s.syntaxErr("invalid character " + quoteByte(c) + " after array element")
		}
		s.skipSpace()
	}
}

// skipSpace skips JSON whitespace.
func (s *jsonScanner) skipSpace() {
	// Most records hold no whitespace between tokens: one compare for them.
	if s.pos < len(s.buf) && s.buf[s.pos] > ' ' {
		return
	}
	s.skipSpaceSlow()
}

func (s *jsonScanner) skipSpaceSlow() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// notString is the error for a non-string value of a string field.
func (s *jsonScanner) notString(field string) *DecodeError {
	if !isValueStart(s.buf[s.pos]) {
		return s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " looking for beginning of value")
	}
	return s.eventErr(field, "must be a string")
}

// eventErr is the error for a rule of the event being decoded.
func (s *jsonScanner) eventErr(field, rule string) *DecodeError {
	return &DecodeError{Index: s.idx, Field: field, Rule: rule}
}

// syntaxErr is the error for invalid JSON at s.pos.
func (s *jsonScanner) syntaxErr(msg string) *DecodeError {
	return &DecodeError{Index: -1, Field: "json", Rule: msg + " at byte " + strconv.Itoa(s.pos)}
}

// syntaxErrAt is syntaxErr for a rule about the byte at s.pos, which may be
// the end of input.
func (s *jsonScanner) syntaxErrAt(where string) *DecodeError {
	if s.pos >= len(s.buf) {
		return s.syntaxErr("unexpected end of input")
	}
	return s.syntaxErr("invalid character " + quoteByte(s.buf[s.pos]) + " " + where)
}

// appendUnquoted appends the text of a validated JSON string's content raw
// to dst. A lone or reversed surrogate escape decodes to U+FFFD and leaves
// the escape after it alone, exactly as encoding/json does, so that field
// names compare equal here when they do there.
func appendUnquoted(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch e := raw[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if pair := utf16.DecodeRune(r, hex4(raw[i+2:])); pair != utf8.RuneError {
						dst = utf8.AppendRune(dst, pair)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, e)
		}
		i += 2
	}
	return dst
}

// hex4 returns the value of the four hex digits at the start of b, which
// the scanner has validated.
func hex4(b []byte) rune {
	_ = b[3]
	return rune(hexVal(b[0]))<<12 | rune(hexVal(b[1]))<<8 | rune(hexVal(b[2]))<<4 | rune(hexVal(b[3]))
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// parseInt parses a validated JSON integer literal. ok is false when it
// does not fit an int64.
func parseInt(lit []byte) (int64, bool) {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if len(lit) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range lit {
		u = u*10 + uint64(c-'0') // 19 digits cannot overflow a uint64
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isValueStart reports whether c can begin a JSON value.
func isValueStart(c byte) bool {
	switch c {
	case '"', '{', '[', 't', 'f', 'n', '-':
		return true
	}
	return isDigit(c)
}

// quoteByte quotes one byte for an error message: 'x', '\x00', '\xff'.
func quoteByte(c byte) string {
	if c < utf8.RuneSelf {
		return strconv.QuoteRune(rune(c))
	}
	return `'\x` + strconv.FormatUint(uint64(c)>>4, 16) + strconv.FormatUint(uint64(c)&15, 16) + `'`
}

// quoteTrunc quotes b for an error message, cut to its first 32 bytes.
func quoteTrunc(b []byte) string {
	const limit = 32
	if len(b) > limit {
		return strconv.Quote(string(b[:limit])) + "..."
	}
	return strconv.Quote(string(b))
}

// numTrunc returns the validated number literal b for an error message,
// cut to its first 32 bytes.
func numTrunc(b []byte) string {
	const limit = 32
	if len(b) > limit {
		return string(b[:limit]) + "..."
	}
	return string(b)
}

// idByte marks the bytes allowed in room and user ids: [A-Za-z0-9._:@-].
var idByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "._:@-" {
		t[c] = true
	}
	return t
}()

// strPlain marks the bytes a JSON string holds as they are: printable
// ASCII other than '"' and '\\'.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
