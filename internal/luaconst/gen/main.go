// Command gen writes lua/consts.lua from luaconsts.go in the current
// directory: the //go:generate line of each package whose scripts share
// constants with Go (board, sink) runs it there.
package main

import (
	"log"
	"os"

	"github.com/rostrumhq/rostrum/internal/luaconst"
)

func main() {
	src, err := os.ReadFile("luaconsts.go")
	if err != nil {
		log.Fatal(err)
	}
	lua, err := luaconst.Render("luaconsts.go", src)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("lua/consts.lua", lua, 0o644); err != nil {
		log.Fatal(err)
	}
}
