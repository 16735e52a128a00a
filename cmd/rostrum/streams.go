package main

import (
	"fmt"

	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/web"
)

// streamFlags bound the live page's event streams (web.Config: the
// streams open at once, per client and the distinct rooms they show).
// Like every flag of `run` each is also ROSTRUM_<FLAG> and a key of the
// --config file.
type streamFlags struct {
	maxStreams          int
	maxStreamsPerClient int
	maxStreamRooms      int
}

func (f *streamFlags) register(fs *cli.FlagSet) {
	fs.Group("limits").Tuning().IntVar(&f.maxStreams, "max-streams", web.DefaultMaxStreams, "event streams (/v1/events) open at once, all clients together; one more answers 503 with Retry-After")
	fs.Group("limits").Tuning().IntVar(&f.maxStreamsPerClient, "max-streams-per-client", web.DefaultMaxStreamsPerClient, "event streams one client address (an IPv6 /64) holds open at once; one more answers 429 with Retry-After")
	fs.Group("limits").Tuning().IntVar(&f.maxStreamRooms, "max-stream-rooms", web.DefaultMaxStreamRooms, "distinct rooms the open event streams show (each read once per interval); a stream for one more room answers 503 with Retry-After")
}

// apply checks the settings and sets them in opts.
func (f *streamFlags) apply(opts *web.Config) error {
	for _, c := range []struct {
		name string
		v    int
	}{{"max-streams", f.maxStreams}, {"max-streams-per-client", f.maxStreamsPerClient}, {"max-stream-rooms", f.maxStreamRooms}} {
		if c.v < 1 || c.v > 1_000_000 {
			return fmt.Errorf("--%s must be between 1 and 1000000, got %d", c.name, c.v)
		}
	}
	opts.MaxStreams, opts.MaxStreamsPerClient, opts.MaxStreamRooms = f.maxStreams, f.maxStreamsPerClient, f.maxStreamRooms
	return nil
}
