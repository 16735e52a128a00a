package testenv

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/internal/luaconst"
	"github.com/rostrumhq/rostrum/internal/redisscript"
)

// CheckScripts loads every Lua file of fsys matching pattern, after its
// includes, into a fresh redis-server with SCRIPT LOAD, so that a Lua
// syntax error fails the tests; and fails unless each file is one of run
// (the scripts a package runs and loads on NOSCRIPT) or is included by one.
func CheckScripts(t *testing.T, fsys fs.FS, pattern string, run []*redisscript.Script) {
	t.Helper()
	all, err := redisscript.ParseAll(fsys, pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatalf("no embedded scripts match %s", pattern)
	}
	c := StartRedis(t).Client()
	if err := redisscript.LoadAll(context.Background(), c, all...); err != nil {
		t.Fatal(err)
	}
	sha := map[string]bool{}
	for _, s := range run {
		sha[s.SHA()] = true
	}
	for _, f := range all {
		if sha[f.SHA()] {
			continue
		}
		included := false
		for _, s := range run {
			included = included || strings.Contains(s.Source(), f.Source())
		}
		if !included {
			t.Errorf("%s is neither run nor included", f.Name())
		}
	}
}

// CheckConstsLua fails unless luaFile of fsys is what luaconst.Render
// makes of goFile, read from the package's directory: the Lua side of the
// constants a package shares with its scripts is current.
func CheckConstsLua(t *testing.T, fsys fs.FS, goFile, luaFile string) {
	t.Helper()
	src, err := os.ReadFile(goFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := luaconst.Render(goFile, src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fs.ReadFile(fsys, luaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what %s makes: run go generate", luaFile, goFile)
	}
}

var (
	// argvSectionLine starts a section of a script's ARGV in its header,
	// and names the Go struct that encodes it.
	argvSectionLine = regexp.MustCompile(`^--.*\((\w+) in scriptargs\.go\)`)
	// argvName is a line of such a section naming an argument (its
	// description goes on in lines indented further).
	argvName = regexp.MustCompile(`^--   ([a-z][A-Za-z0-9]*)(\s|$)`)
)

// CheckScriptArgs checks each script's arguments against its Go encoders
// (scriptargs.go): encoders names, per script, a pointer to each struct
// that encodes a section of its ARGV, in order; a script with none takes
// no ARGV. A script's header must have one section per encoder, each
// opened by a line naming the struct ("(applyArgs in scriptargs.go)") and
// listing its fields by name and in order, one per line ("--   name …").
// The script must read ARGV into A under each of those names at its top,
// in a function decode (local function decode() … local A = decode()) or
// a table constructor (local A = {…}), and no statement after that may
// read ARGV.
func CheckScriptArgs(t *testing.T, fsys fs.FS, scripts []*redisscript.Script, encoders map[string][]any) {
	t.Helper()
	for _, s := range scripts {
		encs, ok := encoders[s.Name()]
		if !ok {
			t.Errorf("%s has no entry in the encoders", s.Name())
			continue
		}
		src, err := fs.ReadFile(fsys, s.Name())
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")
		secs := argvSections(lines)
		if len(secs) < len(encs) {
			t.Errorf("%s: %d header sections of ARGV for %d encoders", s.Name(), len(secs), len(encs))
		}
		var names []string
		for i, sec := range secs {
			if i >= len(encs) {
				t.Errorf("%s: header section %s has no encoder", s.Name(), sec.typ)
				continue
			}
			typ := reflect.TypeOf(encs[i]).Elem()
			var fields []string
			for f := range typ.NumField() {
				fields = append(fields, typ.Field(f).Name)
			}
			if sec.typ != typ.Name() || !reflect.DeepEqual(sec.names, fields) {
				t.Errorf("%s: header section %s lists ARGV\n %v\nits encoder %s has\n %v", s.Name(), sec.typ, sec.names, typ.Name(), fields)
			}
			names = append(names, sec.names...)
		}
		checkDecode(t, s.Name(), lines, names)
	}
}

// argvSection is a section of a script's ARGV in its header.
type argvSection struct {
	typ   string   // the struct that encodes it
	names []string // the arguments it lists
}

// argvSections returns the ARGV sections of a script's lines.
func argvSections(lines []string) []argvSection {
	var out []argvSection
	in := false
	for _, l := range lines {
		if m := argvSectionLine.FindStringSubmatch(l); m != nil {
			out, in = append(out, argvSection{typ: m[1]}), true
			continue
		}
		if !in {
			continue
		}
		sec := &out[len(out)-1]
		if len(sec.names) > 0 && !strings.HasPrefix(l, "--   ") {
			in = false
			continue
		}
		if m := argvName.FindStringSubmatch(l); m != nil {
			sec.names = append(sec.names, m[1])
		}
	}
	return out
}

// checkDecode checks that the script's lines read ARGV into A under each
// of names in one statement at their top, and nowhere else; with no names,
// that they do not read ARGV at all.
func checkDecode(t *testing.T, name string, lines, names []string) {
	t.Helper()
	first, last := len(lines), len(lines)-1 // the decode's lines: none without names
	if len(names) > 0 {
		if first, last = decodeLines(lines); first < 0 || last < 0 {
			t.Errorf("%s: no decode of ARGV into A (local function decode() … local A = decode(), or local A = {…})", name)
			return
		}
		decode := strings.Join(lines[first:last+1], "\n")
		for _, n := range names {
			if !regexp.MustCompile(`\b` + n + ` = `).MatchString(decode) {
				t.Errorf("%s: the decode does not set A.%s", name, n)
			}
		}
	}
	for i, l := range lines {
		code, _, _ := strings.Cut(l, "--")
		if strings.Contains(code, "ARGV") && (i < first || i > last) {
			t.Errorf("%s:%d reads ARGV outside the decode: %s", name, i+1, strings.TrimSpace(l))
		}
	}
}

// decodeLines returns the first and last lines of the statement that reads
// ARGV into A: a function decode up to "local A = decode()", or a table
// constructor "local A = {" up to its closing brace; -1 where none.
func decodeLines(lines []string) (first, last int) {
	for i, l := range lines {
		if l == "local function decode()" {
			for j := i + 1; j < len(lines); j++ {
				if lines[j] == "local A = decode()" {
					return i, j
				}
			}
			return i, -1
		}
		if strings.HasPrefix(l, "local A = {") {
			depth := 0
			for j := i; j < len(lines); j++ {
				code, _, _ := strings.Cut(lines[j], "--")
				if depth += strings.Count(code, "{") - strings.Count(code, "}"); depth == 0 {
					return i, j
				}
			}
			return i, -1
		}
	}
	return -1, -1
}

// redisGlobals are the globals Redis gives a script: the Lua 5.1 base
// functions and the string, table and math libraries, and Redis's own.
var redisGlobals = []string{
	"KEYS", "ARGV", "redis", "struct", "cjson", "bit", "cmsgpack", "unpack",
	"string", "table", "math", "assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget",
	"rawset", "select", "setmetatable", "getmetatable", "tonumber", "tostring", "type", "xpcall",
}

// LintComposed runs luacheck over each script as Redis runs it, its
// includes in place, with no globals but Redis's: whatever an included
// file defines is a local of the script, and no script sets or reads
// another global. (make lint checks each file alone.) An unused local is
// allowed: an include brings what some of its includers do not use. It
// skips the test where luacheck is not on PATH (make deps installs it).
func LintComposed(t *testing.T, scripts []*redisscript.Script) {
	t.Helper()
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
