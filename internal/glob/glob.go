// Package glob escapes text for Redis's glob-style patterns (SCAN MATCH,
// KEYS), so that an environment or board name is matched literally.
package glob

import "strings"

// Escape returns s with the pattern characters *, ?, [, ] and \ escaped.
func Escape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
