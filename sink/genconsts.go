//go:build ignore

// genconsts writes lua/consts.lua from luaconsts.go: go generate ./sink
// runs it in the package's directory.
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
