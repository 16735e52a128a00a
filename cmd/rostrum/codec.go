package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/cli"
)

// cmdCodec prints the meeting score layout that --ranking and
// --score-epoch configure (as `rostrum run` takes them), with examples.
// codecFlags are the settings of `rostrum codec explain`.
type codecFlags struct{ ranking, epoch string }

func (f *codecFlags) register(fs *cli.FlagSet) {
	fs.Group("ranking").Sets("Meeting").StringVar(&f.ranking, "ranking", codec.DefaultRules().String(), "ranking rules, as rostrum run's --ranking")
	fs.Group("ranking").Tuning().StringVar(&f.epoch, "score-epoch", codec.DefaultEpoch.Format(time.RFC3339), "epoch of the score's time field, as rostrum run's --score-epoch")
}

func cmdCodec(args []string, w io.Writer) error {
	if len(args) < 1 || args[0] != "explain" {
		return errors.New("usage: rostrum codec explain [--ranking FIELDS] [--score-epoch TIME]")
	}
	fs := cli.NewFlagSet("codec explain", flag.ContinueOnError)
	fs.SetOutput(w)
	var f codecFlags
	f.register(fs)
	ranking, epochFlag := &f.ranking, &f.epoch
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	rules, err := codec.ParseRules(*ranking)
	if err != nil {
		return fmt.Errorf("--ranking: %v", err)
	}
	epoch, err := time.Parse(time.RFC3339, *epochFlag)
	if err != nil {
		return fmt.Errorf("--score-epoch: %v", err)
	}
	m, err := codec.NewMeetingRules(epoch, rules)
	if err != nil {
		return fmt.Errorf("--ranking: %v", err)
	}
	fmt.Fprintf(w, "ranking rules: %s, then the newest event time\n", rules)
	fmt.Fprintf(w, "meeting layout (most significant first): %s\n", m.Layout())
	for _, f := range m.Layout().Fields() {
		fmt.Fprintf(w, "  %-12s bits %2d..%2d  max %d\n", f.Name, f.Shift, int(f.Shift)+int(f.Bits)-1, f.Max)
	}
	fmt.Fprintf(w, "  time counts %v units since %s; the layout holds until %s\n", m.TimeUnit(), m.Epoch().Format(time.RFC3339),
		m.Epoch().Add(codec.MeetingWindow).Format(time.RFC3339))
	fmt.Fprintf(w, "  rules version %s (stored with each room; a room scored under another version is re-scored when touched)\n\n", m.Version())
	ts := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC).UnixMilli()
	examples := []codec.MemberScore{
		{Spotlight: 1, Audio: 0, Volume: 0, Video: 1, Role: codec.RoleGuest, TS: ts},
		{ScreenShare: 1, Audio: 1, Volume: 20, Video: 0, Role: codec.RoleStudent, TS: ts},
		{Audio: 1, Volume: 512, Video: 1, Role: codec.RoleHost, TS: ts},
		{Audio: 1, Volume: 512, Video: 1, Role: codec.RoleHost, TS: ts + m.TimeUnit().Milliseconds()},
		{Audio: 1, Volume: 100, Video: 0, Role: codec.RoleGuest, TS: ts},
		{Audio: 0, Volume: 999, Video: 1, Role: codec.RoleHost, TS: ts},
	}
	fmt.Fprintln(w, "examples (higher score ranks first):")
	for _, e := range examples {
		s, err := m.Encode(e)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  spotlight=%d screen_share=%d audio=%d volume=%3d video=%d role=%-7s ts=%d → %.0f\n",
			e.Spotlight, e.ScreenShare, e.Audio, e.Volume, e.Video, e.Role, e.TS, s)
	}
	fr, err := codec.NewFirstReached(33)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfirst-reached layout (leaderboards): %s\n", fr)
	return nil
}
