package sink

import (
	"testing"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
)

// TestScriptsLoad loads every embedded Lua file, after its includes, into
// redis-server with SCRIPT LOAD, so that a Lua syntax error fails the
// tests; and checks that each file is a script the package runs (and loads
// on NOSCRIPT) or is included by one.
func TestScriptsLoad(t *testing.T) {
	testenv.CheckScripts(t, luaFiles, "lua/*.lua", scripts)
}

// TestConstsLuaCurrent regenerates lua/consts.lua from luaconsts.go and
// fails when the embedded file differs from it; and checks the constants
// that restate another package's.
func TestConstsLuaCurrent(t *testing.T) {
	testenv.CheckConstsLua(t, luaFiles, "luaconsts.go", "lua/consts.lua")
	far := ranking.MemberState{Presence: ranking.PresenceIn, PresenceTS: 1, MaxTS: 1 << 40}
	b := far.AppendBinary(nil)
	if b[0] != stateFormat {
		t.Errorf("stateFormat %d, AppendBinary writes format %d", stateFormat, b[0])
	}
	if want := codec.MeetingWindow.Milliseconds() - 1; maxTimeOffset != want {
		t.Errorf("maxTimeOffset %d, codec.MeetingWindow less one %d ms", int64(maxTimeOffset), want)
	}
	var back ranking.MemberState
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if d := back.MaxTS - back.PresenceTS; d != maxTimeDelta {
		t.Errorf("maxTimeDelta %d, AppendBinary stores a far time %d before the newest", int64(maxTimeDelta), d)
	}
}

// TestScriptArgs checks each script's arguments against its Go encoders
// (scriptargs.go; see testenv.CheckScriptArgs).
func TestScriptArgs(t *testing.T) {
	testenv.CheckScriptArgs(t, luaFiles, scripts, map[string][]any{
		"lua/apply.lua":      {&applyArgs{}, &applyRoomArgs{}},
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
