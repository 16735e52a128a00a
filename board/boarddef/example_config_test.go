package boarddef_test

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/examples"
)

// ExampleCompile compiles examples/boards.yaml, a board for every seed
// scenario, as `rostrum run --config` does with the boards: key of its file,
// and prints what each board became: its kind, its period or windows (and
// each window's slice), and
// with first-reached ties the split of the 53-bit score between the total
// and the reached time (seed 001's weekly board: 23 bits of total above 30
// bits of milliseconds), its scale and whether it takes refunds.
func ExampleCompile() {
	var file struct {
		Boards []boarddef.Config `yaml:"boards"`
		Hints  any               `yaml:"hints"` // seed 001's hints: package hints
	}
	dec := yaml.NewDecoder(bytes.NewReader(examples.BoardsYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		fmt.Println(err)
		return
	}
	bs, err := boarddef.Compile(file.Boards)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range bs {
		line := b.Name() + ": " + b.Kind().String()
		switch b.Kind() {
		case boarddef.Periodic:
			line += fmt.Sprintf(" by %s, %d kept", b.Unit(), b.Retention())
		case boarddef.Rolling:
			line += fmt.Sprintf(", %d slices of %s", b.WindowSlices()[0], b.Slice())
			if b.HalfLife() > 0 {
				line += fmt.Sprintf(", decay half-life %s, max total %d", b.HalfLife(), b.MaxTotal())
			}
		case boarddef.Windows:
			line += fmt.Sprintf(" %v of %v slices, grace %s", b.Windows(), b.WindowSliceLengths(), b.Grace())
		case boarddef.Total:
			if b.HalfLife() > 0 {
				line += fmt.Sprintf(", decay half-life %s, max total %d", b.HalfLife(), b.MaxTotal())
			}
		}
		if b.Scale() > 1 {
			line += fmt.Sprintf("; scale %d", b.Scale())
		}
		if b.AllowNegative() {
			line += "; refunds"
		}
		if b.FirstReached() {
			line += fmt.Sprintf("; first-reached: max total %d, reached bits %d", b.MaxTotal(), b.ReachedBits())
		}
		fmt.Println(line)
	}
	// Output:
	// room-gifts-7d: rolling, 28 slices of 6h0m0s; refunds; first-reached: max total 8388607, reached bits 30
	// weekly-score: periodic by week, 8 kept; scale 10; first-reached: max total 8388607, reached bits 30
	// weekly-received: periodic by week, 8 kept
	// weekly-read: periodic by week, 8 kept
	// weekly-passed: periodic by week, 8 kept
	// item-trades: windows [3m 10m 1h 6h 24h] of [1m0s 1m0s 5m0s 30m0s 1h0m0s] slices, grace 10s
	// gifts-hour: periodic by hour, 24 kept; refunds; first-reached: max total 1073741823, reached bits 23
	// gifts-day: periodic by day, 7 kept; refunds; first-reached: max total 67108863, reached bits 27
	// gifts-week: periodic by week, 8 kept; refunds; first-reached: max total 8388607, reached bits 30
	// gifts-month: periodic by month, 12 kept; refunds; first-reached: max total 2097151, reached bits 32
	// hot-rooms: total, decay half-life 168h0m0s, max total 536870911; refunds
	// trending-rooms: rolling, 96 slices of 15m0s, decay half-life 6h0m0s, max total 536870911; refunds
}
