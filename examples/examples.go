// Package examples holds rostrum's example configuration files, embedded so
// that `rostrum demo` and the tests run them without a file on disk.
package examples

import (
	"bytes"
	_ "embed"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/board"
)

// BoardsYAML is boards.yaml: a leaderboard for every seed scenario (gift
// ranking over the last 7 days, a weekly board in tenths with first-reached
// ties and action counts, trade totals over several windows,
// hour/day/week/month boards, an all-time decay board), every gift board
// taking refunds, under the boards: key of a config file.
//
//go:embed boards.yaml
var BoardsYAML []byte

// Boards returns the compiled boards of boards.yaml.
func Boards() ([]*board.Board, error) {
	var file struct {
		Boards []board.Config `yaml:"boards"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(BoardsYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		return nil, err
	}
	return board.Compile(file.Boards)
}
