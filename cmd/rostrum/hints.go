package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/hints"
)

// hintsKey is the config-file key holding the hint rules (docs/DESIGN.md §8
// "Hints"), beside boards: in the same file: the rules read the boards'
// numbers, so they are configured, compiled and checked with them.
const hintsKey = "hints"

// readHints returns the hints: list of the YAML config file at path, or nil
// when it has none. An unknown key inside a rule is an error with its line.
func readHints(path string) ([]hints.Rule, error) {
	if path == "" {
		return nil, nil
	}
	b, err := readConfig(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	rules, err := parseHints(b)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return rules, nil
}

// parseHints decodes the hints: list of a YAML document; the other keys are
// left to parseBoards and applySources.
func parseHints(b []byte) ([]hints.Rule, error) {
	var file struct {
		Hints []hints.Rule   `yaml:"hints"`
		Rest  map[string]any `yaml:",inline"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return file.Hints, nil
}

// compileHints compiles the rules against the boards; an error names the
// source, the rule and what does not compile (hints[1] (unread): when: …).
// No rules: a nil chain.
func compileHints(rules []hints.Rule, boards []*boarddef.Board, source string) (*hints.Chain, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	if len(boards) == 0 {
		return nil, fmt.Errorf("%s: hints: the rules read the boards' numbers, and boards: is empty", source)
	}
	c, err := hints.Compile(rules, boards)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return c, nil
}
