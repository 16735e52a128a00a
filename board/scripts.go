package board

import (
	"embed"

	"github.com/rostrumhq/rostrum/internal/redisscript"
)

// The board's Lua scripts, one per file in lua/. Each file's header states
// its contract: KEYS, ARGV (written by its struct in scriptargs.go) and the
// reply. consts.lua (generated from luaconsts.go), score.lua (the score of
// a member and the rolling member state), ranges.lua (the applied offset
// ranges) and the others without a variable here are shared Lua that
// scripts include with "--! include". Every call goes through Store.eval,
// which loads them when Redis lost its script cache.
//
//go:embed lua/*.lua
var luaFiles embed.FS

var (
	// applyLua applies one board's share of a batch atomically, guarded by
	// the applied offset ranges of each partition; lua/apply.lua.
	applyLua = redisscript.MustParse(luaFiles, "lua/apply.lua")
	// expireLua subtracts the slices that have left each window of one
	// rolling or windows board; lua/expire.lua.
	expireLua = redisscript.MustParse(luaFiles, "lua/expire.lua")
	// expireWindowsLua is expireLua for windows boards, whose members keep
	// their slices packed; lua/expirew.lua.
	expireWindowsLua = redisscript.MustParse(luaFiles, "lua/expirew.lua")
	// readLua reads a page of a ranking and the members' states
	// atomically; lua/read.lua.
	readLua = redisscript.MustParse(luaFiles, "lua/read.lua")

	// settleLua freezes a closed period and copies one page of its
	// snapshot; lua/settle.lua.
	settleLua = redisscript.MustParse(luaFiles, "lua/settle.lua")
	// settledLua writes the record of a settled period into the board's
	// outbox once; lua/settled.lua.
	settledLua = redisscript.MustParse(luaFiles, "lua/settled.lua")
	// outboxLua claims and acknowledges the records of settled periods;
	// lua/outbox.lua.
	outboxLua = redisscript.MustParse(luaFiles, "lua/outbox.lua")

	// restoreLua restores a board's frozen mark and index of settled
	// periods from its published records after Redis lost its data;
	// lua/restore.lua.
	restoreLua = redisscript.MustParse(luaFiles, "lua/restore.lua")
	// restorePeriodLua restores one settled period in its own slot;
	// lua/restoreperiod.lua.
	restorePeriodLua = redisscript.MustParse(luaFiles, "lua/restoreperiod.lua")

	// rebaseLua moves a decay board's base to its target while no event
	// arrives; lua/rebase.lua (decay.lua is shared with apply.lua).
	rebaseLua = redisscript.MustParse(luaFiles, "lua/rebase.lua")

	// scripts is every script the store runs, loaded on NOSCRIPT.
	scripts = []*redisscript.Script{applyLua, expireLua, expireWindowsLua, readLua, settleLua, settledLua, outboxLua, restoreLua, restorePeriodLua, rebaseLua, membersLua}
)
