package board

import (
	"context"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/internal/testenv"
)

// TestScriptsLoad loads every embedded Lua file, after its includes, into
// redis-server with SCRIPT LOAD, so that a Lua syntax error fails the
// tests; and checks that each file is a script the store runs (and loads
// on NOSCRIPT) or is included by one.
func TestScriptsLoad(t *testing.T) {
	all, err := redisscript.ParseAll(luaFiles, "lua/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no embedded scripts")
	}
	c := testenv.StartRedis(t).Client()
	if err := redisscript.LoadAll(context.Background(), c, all...); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, s := range scripts {
		listed[s.SHA()] = true
	}
	for _, f := range all {
		if listed[f.SHA()] {
			continue
		}
		included := false
		for _, s := range scripts {
			included = included || strings.Contains(s.Source(), f.Source())
		}
		if !included {
			t.Errorf("%s is neither run nor included", f.Name())
		}
	}
}
