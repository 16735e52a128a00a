package redisscript

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestParse(t *testing.T) {
	fsys := fstest.MapFS{
		"lua/helpers.lua":  {Data: []byte("local function two() return 2 end\n")},
		"lua/nonl.lua":     {Data: []byte("local x = 1")},
		"lua/nested.lua":   {Data: []byte("--! include helpers.lua\n")},
		"lua/main.lua":     {Data: []byte("-- main: the contract\n--! include helpers.lua\nreturn two()\n")},
		"lua/plain.lua":    {Data: []byte("return 1")},
		"lua/twice.lua":    {Data: []byte("--! include helpers.lua\n--! include helpers.lua\n")},
		"lua/missing.lua":  {Data: []byte("--! include gone.lua\n")},
		"lua/usesnest.lua": {Data: []byte("--! include nested.lua\n")},
		"lua/nonlinc.lua":  {Data: []byte("--! include nonl.lua\nreturn x\n")},
		"lua/comment.lua":  {Data: []byte("-- --! include helpers.lua is how a script includes\nreturn 1\n")},
	}
	for _, tc := range []struct {
		name, want, err string
	}{
		{name: "lua/main.lua", want: "-- main: the contract\nlocal function two() return 2 end\nreturn two()\n"},
		{name: "lua/plain.lua", want: "return 1"},
		{name: "lua/nonlinc.lua", want: "local x = 1\nreturn x\n"},
		{name: "lua/comment.lua", want: "-- --! include helpers.lua is how a script includes\nreturn 1\n"},
		{name: "lua/twice.lua", err: "included twice"},
		{name: "lua/missing.lua", err: "gone.lua"},
		{name: "lua/usesnest.lua", err: "includes another"},
		{name: "lua/absent.lua", err: "absent.lua"},
	} {
		s, err := Parse(fsys, tc.name)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%s) = %v, want an error with %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%s): %v", tc.name, err)
			continue
		}
		if s.Source() != tc.want || s.Name() != tc.name {
			t.Errorf("Parse(%s) = %s %q, want %q", tc.name, s.Name(), s.Source(), tc.want)
		}
	}
}

// TestSHA pins the SHA-1 to the one Redis computes for the same source
// (SHA1 of "return 1", as SCRIPT LOAD answers it).
func TestSHA(t *testing.T) {
	if got, want := New("x", "return 1").SHA(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"; got != want {
		t.Fatalf("SHA = %s, want %s", got, want)
	}
}
