package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// boardsKey is the config-file key holding the leaderboards (docs/DESIGN.md §8). It
// is the one key that is not a flag: a list of boards does not fit one.
const boardsKey = "boards"

// readBoards returns the boards: list of the YAML config file at path, or
// nil when the file has none. Unknown keys inside a board are errors with
// their line, as are the flag keys' own errors in applySources.
func readBoards(path string) ([]boarddef.Config, error) {
	if path == "" {
		return nil, nil
	}
	b, err := readConfig(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	cfgs, err := parseBoards(b)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return cfgs, nil
}

// parseBoards decodes the boards: list of a YAML document; the other keys
// are left to applySources.
func parseBoards(b []byte) ([]boarddef.Config, error) {
	var file struct {
		Boards []boarddef.Config `yaml:"boards"`
		Rest   map[string]any    `yaml:",inline"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return file.Boards, nil
}

// compileBoards checks the boards and fits their layouts; an error names
// the board and field (boards[1].slice: …).
func compileBoards(cfgs []boarddef.Config, source string) ([]*boarddef.Board, error) {
	if len(cfgs) == 0 {
		return nil, nil
	}
	bs, err := boarddef.Compile(cfgs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return bs, nil
}
