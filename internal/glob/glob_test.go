package glob

import "testing"

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{"prod": "prod", "a*b?[c]\\d": `a\*b\?\[c\]\\d`, "{x}": "{x}"} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
