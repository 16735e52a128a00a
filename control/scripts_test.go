package control

import (
	"testing"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestScriptsLoad loads every embedded Lua file into redis-server with
// SCRIPT LOAD, so that a Lua syntax error fails the tests, and checks each
// is a script the service runs.
func TestScriptsLoad(t *testing.T) {
	testenv.CheckScripts(t, luaFiles, "lua/*.lua", scripts)
}
