package codec

// The known fields of a callback event and their rules: which names are
// known, how each value is decoded and checked (ids, types, values, times).

import "strconv"

// Bits of the known fields of an event object.
const (
	bitRoomID = 1 << iota
	bitUserID
	bitType
	bitValue
	bitTS
	bitSource
	bitID
	bitBoard
	bitSettled
)

// maxEscapedKnown is the longest a known field name can be in the record:
// its 7 bytes each escaped as \uXXXX. A longer escaped name is unknown
// without decoding it.
const maxEscapedKnown = 6 * len("room_id")

// knownField returns the bit of the known field named k, or 0.
func knownField(k []byte) uint16 {
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
	case "board":
		return bitBoard
	case "settled":
		return bitSettled
	}
	return 0
}

// knownName returns the JSON name of the known field bit f.
func knownName(f uint16) string {
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
	case bitBoard:
		return "board"
	case bitSettled:
		return "settled"
	}
	return "source"
}

// The kinds of JSON value held by a value field until the type is known.
const (
	valueNone   = iota // absent or null
	valueInt           // integer literal
	valueNumber        // number with a fraction or exponent
	valueString        // string
	valueOther         // an object, an array, true or false: only for a type the decoder skips
)

// knownValue decodes the value of known field f of an object at depth. It
// reports whether the value was null.
func (s *jsonScanner) knownValue(ev *Event, f uint16, depth int) (bool, *DecodeError) {
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
	case bitBoard:
		return false, s.boardName(ev)
	case bitSettled:
		switch c {
		case 't':
			ev.Settled = true
			return false, s.literal("true")
		case 'f':
			return false, s.literal("false")
		}
		if !isValueStart(c) {
			return false, s.syntaxErr("invalid character " + quoteByte(c) + " looking for beginning of value")
		}
		return false, s.eventErr("settled", "must be true or false")
	case bitType:
		var scratch [16]byte
		name, err := s.enumName("type", scratch[:0])
		if err != nil {
			return false, err
		}
		t, ok := parseType(name)
		if !ok {
			if s.ignoreUnknown && ignorableType(name) {
				ev.Type, ev.TypeName = TypeIgnored, string(name)
				return false, nil
			}
			return false, s.eventErr("type", "unknown type "+quoteTrunc(name)+" (want join, leave, audio, video, volume, role, screen_share, spotlight, gift, score, received, read, passed, trade or remove)")
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
			if !s.ignoreUnknown {
				return false, s.eventErr("value", "must be an integer, a role name or null")
			}
			// The type may be one the decoder skips, whose value can be
			// anything: validate and skip it; checkValue decides.
			if err := s.skipValue(depth); err != nil {
				return false, err
			}
			s.valKind = valueOther
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

// checkValue applies the value rule of ev.Type to the value field seen,
// and the rules of the fields only a remove event carries (have: the
// fields seen with a non-null value).
func (s *jsonScanner) checkValue(ev *Event, have uint16) *DecodeError {
	lit := s.buf[s.valRef.start:s.valRef.end]
	if ev.Type == TypeRemove {
		if have&bitBoard == 0 {
			return s.eventErr("board", "required for type remove")
		}
	} else {
		if have&bitBoard != 0 {
			return s.eventErr("board", "only for type remove")
		}
		if have&bitSettled != 0 {
			return s.eventErr("settled", "only for type remove")
		}
	}
	switch ev.Type {
	case TypeIgnored:
		return nil // any value: rostrum does not read it
	}
	if s.valKind == valueOther {
		return s.eventErr("value", "must be an integer, a role name or null")
	}
	switch ev.Type {
	case TypeJoin, TypeLeave, TypeReceived, TypeRead, TypePassed, TypeRemove:
		if s.valKind != valueNone {
			return s.eventErr("value", "must be absent for type "+ev.Type.String())
		}
		return nil
	case TypeGift, TypeScore, TypeTrade:
		return s.amount(ev)
	case TypeAudio, TypeVideo, TypeScreenShare, TypeSpotlight:
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

// maxTypeName is the longest name of a type the decoder skips.
const maxTypeName = 64

// ignorableType reports whether an unknown type name is one the decoder
// may skip: 1..64 bytes of [A-Za-z0-9._:@-]. Any other name is an error.
func ignorableType(name []byte) bool {
	if len(name) < 1 || len(name) > maxTypeName {
		return false
	}
	for _, c := range name {
		if !idByte[c] {
			return false
		}
	}
	return true
}

// amount checks that the value field seen is an amount: a JSON number
// without exponent, not 0, with at most MaxDecimals decimal places once
// trailing zeros are dropped, whose digits make at most MaxAmount; it
// stores the digits in ev.Value and the decimal places in ev.Decimals.
func (s *jsonScanner) amount(ev *Event) *DecodeError {
	lit := s.buf[s.valRef.start:s.valRef.end]
	name := ev.Type.String()
	switch s.valKind {
	case valueNone:
		return s.eventErr("value", "required for type "+name)
	case valueString:
		return s.eventErr("value", name+" must be a number, got a string")
	}
	for _, c := range lit {
		if c == 'e' || c == 'E' {
			return s.eventErr("value", name+" must be written without an exponent, got "+numTrunc(lit))
		}
	}
	neg := lit[0] == '-'
	digits := lit
	if neg {
		digits = digits[1:]
	}
	intPart, frac := digits, []byte(nil)
	for i, c := range digits {
		if c == '.' {
			intPart, frac = digits[:i], digits[i+1:]
			break
		}
	}
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if len(frac) > MaxDecimals {
		return s.eventErr("value", name+" has more than "+strconv.Itoa(MaxDecimals)+" decimal places, got "+numTrunc(lit))
	}
	var u uint64
	n := 0
	for _, part := range [2][]byte{intPart, frac} {
		for _, c := range part {
			if u == 0 && c == '0' {
				continue
			}
			if n++; n > 16 {
				return s.eventErr("value", name+" must be at most "+strconv.FormatInt(MaxAmount, 10)+" in magnitude (decimal places included), got "+numTrunc(lit))
			}
			u = u*10 + uint64(c-'0')
		}
	}
	if u > MaxAmount {
		return s.eventErr("value", name+" must be at most "+strconv.FormatInt(MaxAmount, 10)+" in magnitude (decimal places included), got "+numTrunc(lit))
	}
	if u == 0 {
		return s.eventErr("value", name+" must not be 0")
	}
	ev.Value, ev.Decimals = int64(u), uint8(len(frac))
	if neg {
		ev.Value = -ev.Value
	}
	return nil
}

// boardName decodes a remove event's board name: 1..64 bytes of [a-z0-9-].
func (s *jsonScanner) boardName(ev *Event) *DecodeError {
	if s.buf[s.pos] != '"' {
		return s.notString("board")
	}
	ref, err := s.str()
	if err != nil {
		return err
	}
	var scratch [64]byte
	b := s.unquote(scratch[:0], ref)
	if len(b) < 1 || len(b) > 64 {
		return s.eventErr("board", "must be 1..64 bytes, got "+strconv.Itoa(len(b)))
	}
	for j, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return s.eventErr("board", "invalid character "+quoteByte(c)+" at byte "+strconv.Itoa(j)+" (allowed [a-z0-9-])")
		}
	}
	ev.Board = string(b)
	return nil
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
