package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rostrumhq/rostrum/bench/flicker"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/meeting"
	"github.com/rostrumhq/rostrum/stability"
	"github.com/rostrumhq/rostrum/wal"
)

// walMeetings reads the meeting events of every record a WAL holds, by
// room, without locking or repairing it. Records the processor refused
// (they are in the WAL too) and events of other types are skipped.
func walMeetings(dir string) (map[string][]codec.Event, error) {
	dec := codec.NewDecoder(codec.DecodeConfig{MaxFutureSkew: 100 * 365 * 24 * time.Hour, IgnoreUnknownTypes: true})
	rooms := map[string][]codec.Event{}
	var evs []codec.Event
	_, err := wal.Inspect(dir, func(_ uint64, _ time.Time, recs []wal.Record) error {
		for _, r := range recs {
			var err error
			if evs, err = dec.Decode(evs[:0], r.Value, codec.SourceRTC, time.Now()); err != nil {
				continue
			}
			for _, ev := range evs {
				if ev.Type.Meeting() {
					rooms[ev.RoomID] = append(rooms[ev.RoomID], ev)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--wal %s: %w", dir, err)
	}
	return rooms, nil
}

// wantsFlicker reports whether `rostrum-dev bench` was asked for the flicker
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

// cmdFlicker runs `rostrum-dev bench --flicker` (or `rostrum-dev flicker`):
// the flicker benchmark (package bench/flicker, docs/STABILITY.md). It needs
// no servers: the meetings are generated and replayed in process on their
// own clock. With --wal it replays instead the meeting events a
// `rostrum run` recorded in its WAL, room by room.
func cmdFlicker(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench --flicker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, s := range meeting.Scenarios() {
		names = append(names, s.Name)
	}
	fs.Bool("flicker", true, "run the flicker benchmark (these flags) instead of the throughput benchmark")
	scenarios := fs.String("scenarios", strings.Join(names, ","), "scenarios to replay, comma-separated: "+strings.Join(names, ", "))
	seed := fs.Uint64("seed", 1, "seed of the generated meetings")
	duration := fs.Duration("duration", 10*time.Minute, "length of each meeting")
	topN := fs.Int("top-n", 7, "length of the shown list, 1..100")
	batch := fs.Duration("batch", 100*time.Millisecond, "how often the lists are merged (a poll batch)")
	minStint := fs.Duration("min-stint", 2*time.Second, "how long a member stays in (or out of) the raw top-N to truly belong (or no longer belong)")
	dwell := fs.Duration("stability-dwell", stability.DefaultDwell, "hysteresis dwell (0: none)")
	grace := fs.Duration("stability-grace", stability.DefaultGrace, "hysteresis grace (0: none)")
	margin := fs.Int("stability-margin", stability.DefaultMargin, "hysteresis margin in volume steps (0: off)")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	walDir := fs.String("wal", "", "replay the meeting events recorded in this WAL directory (rostrum run's --wal-dir; read without locking) instead of the generated scenarios, per room and overall")
	ranking := fs.String("ranking", codec.DefaultRules().String(), "ranking rules, as rostrum run's --ranking")
	scoreEpoch := fs.String("score-epoch", codec.DefaultEpoch.Format(time.RFC3339), "epoch of the score's time field, as rostrum run's --score-epoch")
	warnings, err := cli.ParseWithAliases(fs, args)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "rostrum-dev:", w)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *minStint <= 0 {
		return errors.New("--min-stint must be positive")
	}
	rules, err := codec.ParseRules(*ranking)
	if err != nil {
		return fmt.Errorf("--ranking: %v", err)
	}
	epoch, err := time.Parse(time.RFC3339, *scoreEpoch)
	if err != nil {
		return fmt.Errorf("--score-epoch: %v", err)
	}
	mc, err := codec.NewMeetingRules(epoch, rules)
	if err != nil {
		return fmt.Errorf("--ranking: %v", err)
	}
	cfg := flicker.Config{Scenarios: cli.SplitList(*scenarios), Seed: *seed, Duration: *duration, N: *topN,
		Batch: *batch, MinStint: *minStint, Dwell: *dwell, Grace: *grace, Margin: *margin, Meeting: mc}
	var rep *flicker.Report
	if *walDir != "" {
		rooms, err := walMeetings(*walDir)
		if err != nil {
			return err
		}
		rep, err = flicker.RunEvents(cfg, rooms)
		if err != nil {
			return fmt.Errorf("--wal %s: %w", *walDir, err)
		}
	} else if rep, err = flicker.Run(cfg); err != nil {
		return err
	}
	return writeReport(stdout, *asJSON, rep)
}
