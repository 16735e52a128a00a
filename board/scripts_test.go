package board

import (
	"bytes"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/internal/luaconst"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestScriptsLoad loads every embedded Lua file, after its includes, into
// redis-server with SCRIPT LOAD, so that a Lua syntax error fails the
// tests; and checks that each file is a script the package runs (and loads
// on NOSCRIPT) or is included by one.
func TestScriptsLoad(t *testing.T) {
	testenv.CheckScripts(t, luaFiles, "lua/*.lua", scripts)
}

// TestConstsLuaCurrent regenerates lua/consts.lua from luaconsts.go and
// fails when the embedded file differs from it.
func TestConstsLuaCurrent(t *testing.T) {
	src, err := os.ReadFile("luaconsts.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := luaconst.Render("luaconsts.go", src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := luaFiles.ReadFile("lua/consts.lua")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("lua/consts.lua is not what luaconsts.go makes: run go generate ./board")
	}
	if maxSum != codec.MaxAmount {
		t.Fatalf("maxSum %d, codec.MaxAmount %d", int64(maxSum), int64(codec.MaxAmount))
	}
}

// scriptArgs is the ARGV encoder of a script (scriptargs.go).
type scriptArgs interface{ append(dst []any) []any }

// argsOf names each script's ARGV encoder.
var argsOf = map[string]scriptArgs{
	"lua/apply.lua":         &applyArgs{},
	"lua/expire.lua":        &expireArgs{},
	"lua/expirew.lua":       &expireWindowsArgs{},
	"lua/rebase.lua":        &rebaseArgs{},
	"lua/read.lua":          &readArgs{},
	"lua/members.lua":       &membersArgs{},
	"lua/settle.lua":        &settleArgs{},
	"lua/settled.lua":       &settledArgs{},
	"lua/outbox.lua":        &outboxArgs{},
	"lua/restore.lua":       &restoreArgs{},
	"lua/restoreperiod.lua": &restorePeriodArgs{},
}

var (
	// argvHeader starts the ARGV section of a script's header, which
	// names the Go encoder.
	argvHeader = regexp.MustCompile(`^-- ARGV \((\w+) in scriptargs\.go\)`)
	// argvName is a line of that section naming an argument (its
	// description goes on in lines indented further).
	argvName = regexp.MustCompile(`^--   ([a-z][A-Za-z0-9]*)(\s|$)`)
)

// TestScriptArgs checks each script's arguments against its Go encoder:
// the header lists the encoder's fields, by name and in order; the script
// reads ARGV into A under each of those names at its top (in a function
// decode, or a table constructor), and no statement after that reads ARGV.
func TestScriptArgs(t *testing.T) {
	for _, s := range scripts {
		enc, ok := argsOf[s.Name()]
		if !ok {
			t.Errorf("%s has no ARGV encoder in argsOf", s.Name())
			continue
		}
		typ := reflect.TypeOf(enc).Elem()
		src, err := luaFiles.ReadFile(s.Name())
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")

		var names []string
		in := false
		for _, l := range lines {
			if m := argvHeader.FindStringSubmatch(l); m != nil {
				if m[1] != typ.Name() {
					t.Errorf("%s: header names %s, its encoder is %s", s.Name(), m[1], typ.Name())
				}
				in = true
				continue
			}
			if in && len(names) > 0 && !strings.HasPrefix(l, "--   ") {
				break
			}
			if m := argvName.FindStringSubmatch(l); in && m != nil {
				names = append(names, m[1])
			}
		}
		var fields []string
		for i := range typ.NumField() {
			fields = append(fields, typ.Field(i).Name)
		}
		if !reflect.DeepEqual(names, fields) {
			t.Errorf("%s: header lists ARGV\n %v\nits encoder %s has\n %v", s.Name(), names, typ.Name(), fields)
		}

		// The statement that reads ARGV into A: from its first line to
		// its last.
		first, last := -1, -1
		for i, l := range lines {
			switch {
			case first < 0 && (l == "local function decode()" || strings.HasPrefix(l, "local A = {")):
				first = i
				if strings.HasSuffix(l, "}") {
					last = i
				}
			case first >= 0 && last < 0 && (l == "local A = decode()" || strings.HasSuffix(l, "}") && !strings.HasPrefix(l, " ") && strings.HasPrefix(lines[first], "local A = {")):
				last = i
			}
		}
		if first < 0 || last < 0 {
			t.Errorf("%s: no decode of ARGV into A (local function decode() … local A = decode(), or local A = {…})", s.Name())
			continue
		}
		decode := strings.Join(lines[first:last+1], "\n")
		for _, n := range names {
			if !regexp.MustCompile(`\b` + n + ` = `).MatchString(decode) {
				t.Errorf("%s: the decode does not set A.%s", s.Name(), n)
			}
		}
		for i, l := range lines {
			code, _, _ := strings.Cut(l, "--")
			if strings.Contains(code, "ARGV") && (i < first || i > last) {
				t.Errorf("%s:%d reads ARGV outside the decode: %s", s.Name(), i+1, strings.TrimSpace(l))
			}
		}
	}
}

// redisGlobals are the globals Redis gives a script: the Lua 5.1 base
// functions and the string, table and math libraries, and Redis's own.
var redisGlobals = []string{
	"KEYS", "ARGV", "redis", "struct", "cjson", "bit", "cmsgpack", "unpack",
	"string", "table", "math", "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget",
	"rawset", "select", "setmetatable", "getmetatable", "tonumber", "tostring", "type", "xpcall",
}

// TestScriptsLintComposed runs luacheck over each script as Redis runs it,
// its includes in place, with no globals but Redis's: whatever an included
// file defines is a local of the script, and no script sets or reads
// another global. (make lint checks each file alone.) An unused local is
// allowed: an include brings functions some of its includers do not call.
func TestScriptsLintComposed(t *testing.T) {
	luacheck, err := exec.LookPath("luacheck")
	if err != nil {
		t.Skip("luacheck not found on PATH (make deps installs it)")
	}
	for _, s := range scripts {
		args := []string{"-", "--no-config", "--std", "none", "--no-max-line-length", "--ignore", "211",
			"--formatter", "plain", "--filename", s.Name(), "--read-globals"}
		cmd := exec.Command(luacheck, append(args, redisGlobals...)...)
		cmd.Stdin = strings.NewReader(s.Source())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("luacheck %s (after its includes): %v\n%s", s.Name(), err, out)
		}
	}
}
