package gateway

// maxDepth is encoding/json's limit of nesting: a body nested deeper is not
// valid JSON to it, so it is not to valid either.
const maxDepth = 10000

// valid reports whether b is one well-formed JSON value with white space
// around it, exactly as json.Valid does (FuzzValid holds the two equal),
// in a single pass without encoding/json's per-byte state functions:
// checking a callback body took a fifth of a request's time.
func valid(b []byte) bool {
	const (
		wantValue  = iota // a value starts at b[i]
		wantKey           // an object's key starts at b[i]
		afterValue        // a value ended before b[i]
	)
	var arrays [(maxDepth + 7) / 8]byte // bit d: the container at depth d is an array (else an object)
	depth := 0
	state := wantValue
	i := skipSpace(b, 0)
	for {
		switch state {
		case wantValue:
			if i >= len(b) {
				return false
			}
			switch c := b[i]; {
			case c == '{' || c == '[':
				if depth == maxDepth {
					return false
				}
				if c == '[' {
					arrays[depth/8] |= 1 << (depth % 8)
				} else {
					arrays[depth/8] &^= 1 << (depth % 8)
				}
				depth++
				i = skipSpace(b, i+1)
				switch {
				case i < len(b) && (c == '[' && b[i] == ']' || c == '{' && b[i] == '}'):
					depth--
					i, state = i+1, afterValue
				case c == '{':
					state = wantKey
				}
				continue
			case c == '"':
				i = validString(b, i)
			case c == '-' || c >= '0' && c <= '9':
				i = validNumber(b, i)
			case c == 't':
				i = literal(b, i, "true")
			case c == 'f':
				i = literal(b, i, "false")
			case c == 'n':
				i = literal(b, i, "null")
			default:
				return false
			}
			if i < 0 {
				return false
			}
			state = afterValue
		case wantKey:
			if i >= len(b) || b[i] != '"' {
				return false
			}
			if i = validString(b, i); i < 0 {
				return false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			i, state = skipSpace(b, i+1), wantValue
		case afterValue:
			i = skipSpace(b, i)
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			inArray := arrays[(depth-1)/8]&(1<<((depth-1)%8)) != 0
			switch c := b[i]; {
			case c == ',':
				i, state = skipSpace(b, i+1), wantKey
				if inArray {
					state = wantValue
				}
			case c == ']' && inArray, c == '}' && !inArray:
				depth--
				i++
			default:
				return false
			}
		}
	}
}

// validString returns the index after the JSON string that starts at
// b[i] == '"', or -1 when it is not one: a control character, a bad
// escape or no closing quote. Any other byte passes, as in encoding/json
// (which does not check UTF-8 either).
func validString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if _, ok := fromHex(h); !ok {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// validNumber returns the index after the JSON number that starts at b[i]
// ('-' or a digit), or -1 when it is not one:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := digits(b, i); j > i {
			i = j
		} else {
			return -1
		}
	}
	return i
}

// digits returns the index after the run of decimal digits at b[i].
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// literal returns the index after word at b[i], or -1 when b[i:] does not
// start with it.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// fromHex returns the value of the hex digit c.
func fromHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
