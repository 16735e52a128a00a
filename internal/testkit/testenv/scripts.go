package testenv

import (
	"context"
	"io/fs"
	"strings"
	"testing"

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
