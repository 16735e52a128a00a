package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

func cmdCodec(args []string, w io.Writer) error {
	if len(args) != 1 || args[0] != "explain" {
		return errors.New("usage: rostrum codec explain")
	}
	m := codec.NewMeeting(codec.DefaultEpoch)
	fmt.Fprintf(w, "meeting layout (most significant first): %s\n", m.Layout())
	for _, f := range m.Layout().Fields() {
		fmt.Fprintf(w, "  %-7s bits %2d..%2d  max %d\n", f.Name, f.Shift, int(f.Shift)+int(f.Bits)-1, f.Max)
	}
	fmt.Fprintf(w, "  time is ms since %s; the layout holds until %s\n\n", m.Epoch().Format(time.RFC3339),
		m.Epoch().Add(time.Duration(1<<38)*time.Millisecond).Format(time.RFC3339))
	ts := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC).UnixMilli()
	examples := []codec.MemberScore{
		{Audio: 1, Volume: 512, Video: 1, Role: codec.RoleHost, TS: ts},
		{Audio: 1, Volume: 512, Video: 1, Role: codec.RoleHost, TS: ts + 1},
		{Audio: 1, Volume: 100, Video: 0, Role: codec.RoleGuest, TS: ts},
		{Audio: 0, Volume: 999, Video: 1, Role: codec.RoleHost, TS: ts},
	}
	fmt.Fprintln(w, "examples (higher score ranks first):")
	for _, e := range examples {
		s, err := m.Encode(e)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  audio=%d volume=%3d video=%d role=%-7s ts=%d → %.0f\n", e.Audio, e.Volume, e.Video, e.Role, e.TS, s)
	}
	fr, err := codec.NewFirstReached(33)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nfirst-reached layout (leaderboards): %s\n", fr)
	return nil
}
