package board

import (
	"testing"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestScriptsLoad loads every embedded Lua file, after its includes, into
// redis-server with SCRIPT LOAD, so that a Lua syntax error fails the
// tests; and checks that each file is a script the package runs (and loads
// on NOSCRIPT) or is included by one.
func TestScriptsLoad(t *testing.T) {
	testenv.CheckScripts(t, luaFiles, "lua/*.lua", scripts)
}
