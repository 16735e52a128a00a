package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/board"
)

// boardsKey is the config-file key holding the leaderboards (docs/DESIGN.md §8). It
// is the one key that is not a flag: a list of boards does not fit one.
const boardsKey = "boards"

// readBoards returns the boards: list of the YAML config file at path, or
// nil when the file has none, and a warning per deprecated key. Unknown keys inside a board are errors with
// their line, as are the flag keys' own errors in applySources.
func readBoards(path string) ([]board.Config, []string, error) {
	if path == "" {
		return nil, nil, nil
	}
	b, err := readConfig(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--config: %w", err)
	}
	cfgs, warnings, err := parseBoards(b)
	if err != nil {
		return nil, nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return cfgs, warnings, nil
}

// deprecatedBoardKeys are the board keys rostrum used to spell with
// underscores; every other key of the config file is kebab-case. The old
// spelling is still read, with a warning.
var deprecatedBoardKeys = map[string]string{
	"week_start":     "week-start",
	"tie_resolution": "tie-resolution",
	"max_total":      "max-total",
}

// parseBoards decodes the boards: list of a YAML document; the other keys
// are left to applySources. It returns a warning for each deprecated key.
func parseBoards(b []byte) ([]board.Config, []string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, nil, err
	}
	warnings := renameBoardKeys(&doc)
	if len(warnings) > 0 {
		var err error
		if b, err = yaml.Marshal(&doc); err != nil {
			return nil, nil, err
		}
	}
	var file struct {
		Boards []board.Config `yaml:"boards"`
		Rest   map[string]any `yaml:",inline"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	return file.Boards, warnings, nil
}

// renameBoardKeys rewrites the deprecated keys of every board in doc to
// their kebab-case spelling, and says where it did.
func renameBoardKeys(doc *yaml.Node) (warnings []string) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	top := doc.Content[0].Content
	for i := 0; i+1 < len(top); i += 2 {
		if top[i].Value != boardsKey || top[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for bi, bd := range top[i+1].Content {
			if bd.Kind != yaml.MappingNode {
				continue
			}
			for k := 0; k+1 < len(bd.Content); k += 2 {
				key := bd.Content[k]
				if to, ok := deprecatedBoardKeys[key.Value]; ok {
					warnings = append(warnings, fmt.Sprintf("boards[%d].%s (line %d) is deprecated: write %s", bi, key.Value, key.Line, to))
					key.Value = to
				}
			}
		}
	}
	return warnings
}

// compileBoards checks the boards and fits their layouts; an error names
// the board and field (boards[1].slice: …).
func compileBoards(cfgs []board.Config, source string) ([]*board.Board, error) {
	if len(cfgs) == 0 {
		return nil, nil
	}
	bs, err := board.Compile(cfgs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return bs, nil
}
