package main

import (
	"time"

	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
)

// storeLimitFlags bound what the store keeps and writes at once: members
// per room, the state cache, rooms per script call and per round trip (see
// docs/RELIABILITY.md).
type storeLimitFlags struct {
	maxRoomMembers   int
	maxRoomsPerApply int
	stateCache       int
	roomsPerScript   int
}

func (f *storeLimitFlags) register(fs *cli.FlagSet) {
	fs.Group("limits").Tuning().Sets("MaxMembers").IntVar(&f.maxRoomMembers, "max-room-members", 100000, "members kept per room at most; a new member beyond it goes to the DLQ (0: no cap)")
	fs.Group("limits").Tuning().Sets("CacheMembers").IntVar(&f.stateCache, "state-cache", sink.DefaultCacheMembers, "member states kept in memory (about 190 B each), from which a room's apply is planned in one round trip; a room not held is read first, a second one (0: none kept)")
	fs.Group("limits").Tuning().Sets("RoomsPerScript").IntVar(&f.roomsPerScript, "rooms-per-script", sink.DefaultRoomsPerScript, "cached rooms one Redis script call applies on a single Redis node (1: a call per room; always 1 on a Redis Cluster)")
	fs.Group("limits").Tuning().Sets("MaxRoomsPerApply").IntVar(&f.maxRoomsPerApply, "max-rooms-per-apply", 50000, "rooms written per Redis round trip at most; a batch touching more is applied in several")
}

// apply sets the limits in the processor's and the sink's configurations,
// whose Validate methods check them.
func (f *storeLimitFlags) apply(pc *processor.Config, so *sink.Config) {
	so.MaxMembers = f.maxRoomMembers
	so.CacheMembers = f.stateCache
	so.RoomsPerScript = f.roomsPerScript
	pc.MaxRoomsPerApply = f.maxRoomsPerApply
}

// batchFlags are the batch's back-pressure settings: the pipeline, the
// acknowledgement delay, and when a failing batch makes /readyz report not
// ready.
type batchFlags struct {
	pipeline        bool
	ackDelay        time.Duration
	unreadyFailures int
	unreadyAfter    time.Duration
}

func (f *batchFlags) register(fs *cli.FlagSet) {
	fs.Group("limits").Tuning().Sets("PipelineBatches").BoolVar(&f.pipeline, "pipeline-batches", false, "turn the batch pipeline on: poll, decode and WAL-append the next batch while the current one is in Redis (off by default until it measures better; no effect with boards)")
	fs.Group("limits").Tuning().Sets("AckDelay").DurationVar(&f.ackDelay, "ack-delay", time.Second, "how long the acknowledgement of a published output waits to ride in the room's next apply before it is sent on its own (0: with the next batch); after a crash, outputs acknowledged within it are published again, identical")
	fs.Group("ops").Tuning().Sets("Retry.UnreadyFailures").IntVar(&f.unreadyFailures, "unready-failures", 3, "/readyz reports not ready after this many failed attempts of a batch in a row")
	fs.Group("ops").Tuning().Sets("Retry.UnreadyAfter").DurationVar(&f.unreadyAfter, "unready-after", 10*time.Second, "or after a batch has been failing this long")
}

// apply sets the settings in the processor's configuration, whose Validate
// checks them.
func (f *batchFlags) apply(pc *processor.Config) {
	pc.PipelineBatches = f.pipeline
	pc.AckDelay = cli.AckDelay(f.ackDelay)
	pc.Retry.UnreadyFailures = f.unreadyFailures
	pc.Retry.UnreadyAfter = f.unreadyAfter
}
