package luaconst

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	src := `package p

// The kinds.
const (
	// kindPeriod is a periodic board.
	kindPeriod = "p"
	kindTotal  = "t" // a total board, not a kindPeriod
)

const maxRanges = 64

const (
	maxSum = 1<<53 - 1
	minSum = -maxSum
	odd    = "it's \\ a\ttab"
	_      = 1.5
)

var notConst = "x"
`
	want := `-- Code generated from c.go by go generate; DO NOT EDIT.
--
-- Each constant of c.go as a local named in upper snake case; a
-- script includes this file first ("--! include consts.lua").

-- The kinds.
-- KIND_PERIOD is a periodic board.
local KIND_PERIOD = 'p'
local KIND_TOTAL = 't' -- a total board, not a KIND_PERIOD

local MAX_RANGES = 64

local MAX_SUM = 9007199254740991
local MIN_SUM = -9007199254740991
local ODD = 'it\039s \092 a\009tab'
`
	got, err := Render("c.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("Render:\n%s\nwant:\n%s", got, want)
	}
}

func TestRenderRefuses(t *testing.T) {
	for _, tc := range []struct{ src, err string }{
		{`import "fmt"; const x = 1; var _ = fmt.Sprint`, "imports"},
		{`const x = 1.5`, "Float"},
		{`const x = true`, "Bool"},
		{`const x = 1 << 53`, "not exact"},
		{`const x = -(1 << 60)`, "not exact"},
		{`const (readTTL = "a"; read_TTL = "b")`, "both READ_TTL"},
		{`const x = y`, "undefined"},
	} {
		_, err := Render("c.go", []byte("package p\n"+tc.src+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Render(%q) = %v, want an error with %q", tc.src, err, tc.err)
		}
	}
}

func TestUpperSnake(t *testing.T) {
	for in, want := range map[string]string{
		"kindPeriod":   "KIND_PERIOD",
		"maxRanges":    "MAX_RANGES",
		"readTTLValue": "READ_TTL_VALUE",
		"fieldGen":     "FIELD_GEN",
		"x":            "X",
		"utf8Len":      "UTF8_LEN",
		"ioID":         "IO_ID",
	} {
		if got := upperSnake(in); got != want {
			t.Errorf("upperSnake(%q) = %q, want %q", in, got, want)
		}
	}
}
