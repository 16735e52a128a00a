package sink

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

// TestConstsLuaCurrent regenerates lua/consts.lua from luaconsts.go and
// fails when the embedded file differs from it.
func TestConstsLuaCurrent(t *testing.T) {
	testenv.CheckConstsLua(t, luaFiles, "luaconsts.go", "lua/consts.lua")
}

// TestScriptArgs checks each script's arguments against its Go encoders
// (scriptargs.go; see testenv.CheckScriptArgs).
func TestScriptArgs(t *testing.T) {
	testenv.CheckScriptArgs(t, luaFiles, scripts, map[string][]any{
		"lua/load.lua":       {&loadArgs{}, &loadRoomArgs{}},
		"lua/fast.lua":       {&fastArgs{}, &fastRoomArgs{}},
		"lua/commit.lua":     {&commitArgs{}},
		"lua/ack.lua":        {&ackArgs{}},
		"lua/settle.lua":     {&settleArgs{}},
		"lua/restore.lua":    {&restoreArgs{}},
		"lua/generation.lua": nil,
	})
}

// TestScriptsLintComposed runs luacheck over each script as Redis runs it
// (see testenv.LintComposed).
func TestScriptsLintComposed(t *testing.T) {
	testenv.LintComposed(t, scripts)
}
