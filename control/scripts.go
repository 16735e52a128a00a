package control

import (
	"embed"

	"github.com/rostrumhq/rostrum/internal/redisscript"
)

// luaFiles are the control scripts; each file starts with its KEYS/ARGV/reply
// contract.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// The scripts, run through internal/redisscript like the sink's and the
// boards'.
var (
	recordingScript = redisscript.MustParse(luaFiles, "lua/recording.lua")
	layoutScript    = redisscript.MustParse(luaFiles, "lua/layout.lua")
	claimScript     = redisscript.MustParse(luaFiles, "lua/claim.lua")
	renewScript     = redisscript.MustParse(luaFiles, "lua/renew.lua")

	scripts = []*redisscript.Script{recordingScript, layoutScript, claimScript, renewScript}
)

// Operations of recording.lua (ARGV[1]); the script names the same codes.
const (
	opStart = 1
	opStop  = 2
	opRead  = 3
)

// Reply codes of recording.lua (reply[1]).
const (
	recWon      = 1 // the step changed the state: 201 (start) or 200 (stop)
	recConflict = 2 // the state did not allow the step: 409
	recReplay   = 3 // an Idempotency-Key's answer, kept from the first time
	recRead     = 4 // a read: 200
)

// Operations of layout.lua (ARGV[1]).
const (
	opPut = 1
	opGet = 2
)

// Reply codes of layout.lua (reply[1]).
const (
	layStored = 1 // the layout was stored under a new version
	layStale  = 2 // If-Match named another version: 412
	layGot    = 3 // a read
)
