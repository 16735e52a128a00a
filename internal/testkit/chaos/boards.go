package chaos

import (
	_ "embed"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
)

//go:embed boards.yaml
var boardsYAML []byte

// CheaterBoards are the boards of boards.yaml the chaos traces remove
// cheaters from (trace.BoardConfig.RemoveBoards): a room board, a user
// board in tenths and a user day board.
var CheaterBoards = []string{"room-gifts-7d", "weekly-score", "gifts-day"}

// Boards compiles the boards every chaos processor runs (boards.yaml),
// the decay boards with the epoch and grace that move their base at the
// moment DecayAtEnv sets (checkdecay.go), as BoardsAt does.
func Boards() ([]*boarddef.Board, error) {
	at, err := decayAtFromEnv()
	if err != nil {
		return nil, err
	}
	return BoardsAt(at)
}

// BoardsAt compiles BoardsYAML(at): the boards a processor started with
// that file runs, and those Check compares.
func BoardsAt(at time.Time) ([]*boarddef.Board, error) {
	data, err := BoardsYAML(at)
	if err != nil {
		return nil, err
	}
	var file struct {
		Boards []boarddef.Config `yaml:"boards"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("chaos: boards.yaml: %w", err)
	}
	bs, err := boarddef.Compile(file.Boards)
	if err != nil {
		return nil, fmt.Errorf("chaos: boards.yaml: %w", err)
	}
	return bs, nil
}

// BoardsYAML returns boards.yaml with an epoch and a grace on every decay
// board that move its base target at at (decayPlace), for a processor run
// with --config; boards.yaml as it is when at is zero. at should be a
// whole second: the grace takes its seconds.
func BoardsYAML(at time.Time) ([]byte, error) {
	if at.IsZero() {
		return boardsYAML, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(boardsYAML, &doc); err != nil {
		return nil, fmt.Errorf("chaos: boards.yaml: %w", err)
	}
	list := value(doc.Content[0], "boards")
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("chaos: boards.yaml: no list of boards")
	}
	for _, n := range list.Content {
		var c boarddef.Config
		if err := n.Decode(&c); err != nil {
			return nil, fmt.Errorf("chaos: boards.yaml: line %d: %w", n.Line, err)
		}
		if c.Decay == nil {
			continue
		}
		h, err := time.ParseDuration(c.Decay.HalfLife)
		if err != nil {
			return nil, fmt.Errorf("chaos: boards.yaml: %s: half-life %q: %w", c.Name, c.Decay.HalfLife, err)
		}
		epoch, grace := decayPlace(at, h)
		setValue(n, "epoch", epoch.UTC().Format(time.RFC3339))
		setValue(n, "grace", grace.String())
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, fmt.Errorf("chaos: boards.yaml: %w", err)
	}
	return out, nil
}

// value returns the value of key in mapping m, nil when absent.
func value(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setValue sets key of mapping m to the plain scalar v.
func setValue(m *yaml.Node, key, v string) {
	if n := value(m, key); n != nil {
		*n = yaml.Node{Kind: yaml.ScalarNode, Value: v}
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: v})
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
