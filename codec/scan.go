package codec

// The JSON scanner of Decode: one forward pass over a record with no
// backtracking and no allocation for known fields. It is one cohesive
// algorithm (strings, numbers, skipping of unknown values, error positions),
// kept in one file on purpose; the rules of the known fields are in
// fields.go.

import (
	"bytes"
	"hash/maphash"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
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
	// ignoreUnknown: a well-formed event of an unknown type is returned as
	// TypeIgnored instead of rejecting the record.
	ignoreUnknown bool

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
	var seen, have uint16 // fields seen; fields seen with a non-null value
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

			var f uint16
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
				isNull, err := s.knownValue(ev, f, depth)
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
	return s.checkValue(ev, have)
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

// strPlain marks the bytes a JSON string holds as they are: printable
// ASCII other than '"' and '\\'.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
