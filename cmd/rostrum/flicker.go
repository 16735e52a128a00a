package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rostrumhq/rostrum/bench/flicker"
	"github.com/rostrumhq/rostrum/stability"
)

// wantsFlicker reports whether `rostrum bench` was asked for the flicker
// benchmark, which has flags of its own.
func wantsFlicker(args []string) bool {
	for _, a := range args {
		switch a {
		case "--flicker", "-flicker", "--flicker=true", "-flicker=true":
			return true
		case "--":
			return false
		}
	}
	return false
}

// cmdFlicker runs `rostrum bench --flicker`: the flicker benchmark (package
// bench/flicker, docs/STABILITY.md). It needs no servers: the meetings are
// generated and replayed in process on their own clock.
func cmdFlicker(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench --flicker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, s := range flicker.Scenarios() {
		names = append(names, s.Name)
	}
	fs.Bool("flicker", true, "run the flicker benchmark (these flags) instead of the throughput benchmark")
	scenarios := fs.String("scenarios", strings.Join(names, ","), "scenarios to replay, comma-separated: "+strings.Join(names, ", "))
	seed := fs.Uint64("seed", 1, "seed of the generated meetings")
	duration := fs.Duration("duration", 10*time.Minute, "length of each meeting")
	topN := fs.Int("top-n", 7, "length of the shown list, 1..100")
	batch := fs.Duration("batch", 100*time.Millisecond, "how often the lists are merged (a poll batch)")
	minStint := fs.Duration("min-stint", 2*time.Second, "how long a member stays in (or out of) the raw top-N to truly belong (or no longer belong)")
	dwell := fs.Duration("dwell", stability.DefaultDwell, "hysteresis dwell (0: none)")
	grace := fs.Duration("grace", stability.DefaultGrace, "hysteresis grace (0: none)")
	margin := fs.Int("margin", stability.DefaultMargin, "hysteresis margin in volume steps (0: off)")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *minStint <= 0 {
		return errors.New("--min-stint must be positive")
	}
	cfg := flicker.Config{Scenarios: splitList(*scenarios), Seed: *seed, Duration: *duration, N: *topN,
		Batch: *batch, MinStint: *minStint, Dwell: *dwell, Grace: *grace, Margin: *margin}
	rep, err := flicker.Run(cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(stdout)
}
