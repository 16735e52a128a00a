package chaos

import (
	_ "embed"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/internal/trace"
)

//go:embed boards.yaml
var boardsYAML []byte

// CheaterBoards are the boards of boards.yaml the chaos traces remove
// cheaters from (trace.BoardConfig.RemoveBoards): a room board, a user
// board in tenths and a user day board.
var CheaterBoards = []string{"room-gifts-7d", "weekly-score", "gifts-day"}

// Boards compiles the boards every chaos processor runs (boards.yaml),
// the decay boards with the epoch and grace that move their base at the
// moment DecayAtEnv sets (checkdecay.go).
func Boards() ([]*board.Board, error) {
	var file struct {
		Boards []board.Config `yaml:"boards"`
	}
	if err := yaml.Unmarshal(boardsYAML, &file); err != nil {
		return nil, fmt.Errorf("chaos: boards.yaml: %w", err)
	}
	at, err := decayAtFromEnv()
	if err != nil {
		return nil, err
	}
	for i := range file.Boards {
		if c := &file.Boards[i]; c.Decay != nil && !at.IsZero() {
			h, err := time.ParseDuration(c.Decay.HalfLife)
			if err != nil {
				return nil, fmt.Errorf("chaos: boards.yaml: %s: half-life %q: %w", c.Name, c.Decay.HalfLife, err)
			}
			epoch, grace := decayPlace(at, h)
			c.Epoch, c.Grace = epoch, &grace
		}
	}
	bs, err := board.Compile(file.Boards)
	if err != nil {
		return nil, fmt.Errorf("chaos: boards.yaml: %w", err)
	}
	return bs, nil
}

// Trace returns a chaos input: the meeting trace of cfg, whose second half
// is interleaved with the board records of bcfg (none when bcfg is nil),
// and the index of the first record of that second half. No board record
// comes before split, so a test can produce the meeting records alone
// first and then both kinds (see TestChaos).
func Trace(cfg trace.Config, bcfg *trace.BoardConfig) (recs []trace.Record, split int) {
	recs = trace.Generate(cfg)
	split = len(recs) / 2
	if bcfg == nil {
		return recs, split
	}
	mixed := trace.Interleave(cfg.Seed, recs[split:], trace.GenerateBoards(*bcfg))
	return append(recs[:split:split], mixed...), split
}
