// Package examples holds rostrum's example configuration files, embedded so
// that `rostrum demo` and the tests run them without a file on disk.
package examples

import (
	"bytes"
	_ "embed"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/hints"
)

// BoardsYAML is boards.yaml: a leaderboard for every seed scenario (gift
// ranking over the last 7 days, a weekly board in tenths with first-reached
// ties and action counts, trade totals over several windows,
// hour/day/week/month boards, an all-time decay board), every gift board
// taking refunds, under the boards: key of a config file, and seed 001's
// hints under hints:.
//
//go:embed boards.yaml
var BoardsYAML []byte

// file is boards.yaml's content.
type file struct {
	Boards []boarddef.Config `yaml:"boards"`
	Hints  []hints.Rule      `yaml:"hints"`
}

func read() (file, error) {
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(BoardsYAML))
	dec.KnownFields(true)
	err := dec.Decode(&f)
	return f, err
}

// Boards returns the compiled boards of boards.yaml.
func Boards() ([]*boarddef.Board, error) {
	f, err := read()
	if err != nil {
		return nil, err
	}
	return boarddef.Compile(f.Boards)
}

// Hints returns the compiled hints of boards.yaml (seed 001's lines), over
// its boards.
func Hints() (*hints.Chain, error) {
	f, err := read()
	if err != nil {
		return nil, err
	}
	bs, err := boarddef.Compile(f.Boards)
	if err != nil {
		return nil, err
	}
	return hints.Compile(f.Hints, bs)
}
