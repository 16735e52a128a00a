package sink

import (
	"embed"

	"github.com/rostrumhq/rostrum/internal/redisscript"
)

// The sink's Lua scripts, one per file in lua/. Each file's header states
// its contract: KEYS, ARGV (written by its struct in scriptargs.go) and the
// reply. consts.lua (generated from luaconsts.go) is shared Lua that
// scripts include with "--! include". Every call goes through Store.run,
// which loads them when Redis lost its script cache.
//
//go:embed lua/*.lua
var luaFiles embed.FS

var (
	// loadLua reads rooms' member states, stable hashes and watermarks for
	// the sink to plan their applies; lua/load.lua.
	loadLua = redisscript.MustParse(luaFiles, "lua/load.lua")
	// fastLua writes the member states and scores the sink planned, under
	// the rooms' state tokens and watermarks, and with a merge mode stores
	// the stable step as commitLua would, for one room or several
	// (Config.RoomsPerScript); lua/fast.lua.
	fastLua = redisscript.MustParse(luaFiles, "lua/fast.lua")
	// commitLua stores a room's new stable list and hysteresis state under
	// a compare-and-set, and marks the output pending; lua/commit.lua.
	commitLua = redisscript.MustParse(luaFiles, "lua/commit.lua")
	// ackLua clears rooms' pending outputs once published; lua/ack.lua.
	ackLua = redisscript.MustParse(luaFiles, "lua/ack.lua")
	// settleLua moves or removes a room's due entry unless it changed
	// since read; lua/settle.lua.
	settleLua = redisscript.MustParse(luaFiles, "lua/settle.lua")
	// restoreLua seeds a room's stable hash after Redis lost or rolled
	// back its data; lua/restore.lua.
	restoreLua = redisscript.MustParse(luaFiles, "lua/restore.lua")
	// generationLua reads the generation marker after a round trip's room
	// scripts; lua/generation.lua.
	generationLua = redisscript.MustParse(luaFiles, "lua/generation.lua")

	// scripts is every script the sink runs, loaded on NOSCRIPT.
	scripts = []*redisscript.Script{loadLua, fastLua, commitLua, ackLua, settleLua, restoreLua, generationLua}
)
