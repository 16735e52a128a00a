package codec

import (
	"strings"
	"testing"
)

// TestCheckIDBytes: the id syntax is one, whether the id comes as a string
// or as bytes; the errors read the same.
func TestCheckIDBytes(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"r-1001", true},
		{"A.b_c:d@e-0", true},
		{strings.Repeat("x", maxIDBytes), true},
		{"", false},
		{strings.Repeat("x", maxIDBytes+1), false},
		{"r 1", false},
		{"r/1", false},
		{"é", false},
	} {
		s, b := CheckID(tc.id), CheckIDBytes([]byte(tc.id))
		if (s == nil) != tc.ok || (b == nil) != tc.ok {
			t.Errorf("%q: CheckID %v, CheckIDBytes %v, want ok %v", tc.id, s, b, tc.ok)
		}
		if s != nil && b != nil && s.Error() != b.Error() {
			t.Errorf("%q: CheckID says %q, CheckIDBytes %q", tc.id, s, b)
		}
	}
}
