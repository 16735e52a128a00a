package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/config"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

const walUsage = `usage:
  rostrum wal inspect --wal-dir DIR [--room ROOM] [--records]
  rostrum wal replay  --wal-dir DIR --redis ADDR --env ENV [--from SEQ] [other run flags]
                      (or --redis-sentinel-master NAME --redis-sentinels HOST:PORT,… for --redis)`

func cmdWAL(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(walUsage)
	}
	switch args[0] {
	case "inspect":
		return walInspect(args[1:], stdout, stderr)
	case "replay":
		return walReplay(ctx, args[1:], stdout, stderr)
	default:
		return fmt.Errorf("unknown wal command %q\n%s", args[0], walUsage)
	}
}

type partRange struct {
	first, last int64
	records     int
}

// walInspectFlags are the settings of `rostrum wal inspect`.
type walInspectFlags struct {
	dir, room string
	records   bool
}

func (f *walInspectFlags) register(fs *cli.FlagSet) {
	fs.Group("ops").StringVar(&f.dir, "wal-dir", "./wal", "write-ahead log directory")
	fs.Group("command").StringVar(&f.room, "room", "", "print the records (and events) of this room")
	fs.Group("command").BoolVar(&f.records, "records", false, "print every record")
}

// walReplayFlags are the settings of `rostrum wal replay`: the store's, as
// `rostrum run` takes them, and where to start.
type walReplayFlags struct {
	storeFlags
	from uint64
}

func (f *walReplayFlags) register(fs *cli.FlagSet) {
	f.storeFlags.register(fs)
	fs.Group("command").Uint64Var(&f.from, "from", 1, "first WAL sequence to replay")
}

// walInspect reads a WAL directory without locking or repairing it, so it
// can run beside a live processor.
func walInspect(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("wal inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f walInspectFlags
	f.register(fs)
	dir, room, all := &f.dir, &f.room, &f.records
	if err := fs.Parse(args); err != nil {
		return err
	}
	dec := codec.NewDecoder(codec.DecodeConfig{MaxFutureSkew: 100 * 365 * 24 * time.Hour})
	parts := map[string]*partRange{}
	var batches, records int
	var firstSeq, lastSeq uint64
	var evs []codec.Event
	segs, err := wal.Inspect(*dir, func(seq uint64, appended time.Time, recs []wal.Record) error {
		if firstSeq == 0 {
			firstSeq = seq
		}
		lastSeq = seq
		batches++
		records += len(recs)
		for _, r := range recs {
			k := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			pr := parts[k]
			if pr == nil {
				pr = &partRange{first: r.Offset}
				parts[k] = pr
			}
			pr.last = r.Offset
			pr.records++
			show := *all
			if *room != "" {
				evs, _ = dec.Decode(evs[:0], r.Value, 0, time.Now())
				show = string(r.Key) == *room
				for _, ev := range evs {
					show = show || ev.RoomID == *room
				}
			}
			if show {
				fmt.Fprintf(stdout, "batch %d  %s  %s/%d@%d  key=%s  %s\n", seq, appended.UTC().Format(time.RFC3339Nano),
					r.Topic, r.Partition, r.Offset, r.Key, r.Value)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("--wal-dir %s: %w", *dir, err)
	}
	fmt.Fprintf(stdout, "WAL %s: %d segments, %d batches (seq %d..%d), %d records\n", *dir, len(segs), batches, firstSeq, lastSeq, records)
	for _, s := range segs {
		fmt.Fprintf(stdout, "  segment %s  seq %d..%d  %d batches  %d bytes\n", s.Path, s.FirstSeq, s.LastSeq, s.Batches, s.Bytes)
	}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(stdout, "  partition offsets:")
	for _, k := range keys {
		p := parts[k]
		fmt.Fprintf(stdout, "    %-32s %d..%d  (%d records)\n", k, p.first, p.last, p.records)
	}
	return nil
}

// walReplay applies a WAL to Redis through the watermarks: what Redis holds
// already is skipped, what it lost is applied again.
func walReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("wal replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f walReplayFlags
	f.register(fs)
	if err := f.parse(fs, args, &f.routes, runKeys()); err != nil {
		return err
	}
	lg, err := f.logger(stderr)
	if err != nil {
		return err
	}
	pc, so, wo, err := f.storeConfig(lg)
	if err != nil {
		return err
	}
	if err := f.validate(so); err != nil {
		return err
	}
	rc, err := f.openRedis(ctx, f.redis)
	if err != nil {
		return err
	}
	defer rc.Close()
	store, err := sink.New(rc, so)
	if err != nil {
		return err
	}
	if len(pc.Boards) > 0 {
		// The config file's boards are replayed too, under their applied
		// offset ranges: what they hold already counts once.
		pc.BoardStore = board.NewStore(rc, f.env, pc.Boards)
	}
	log, err := wal.Open(f.walDir, wo)
	if err != nil {
		return fmt.Errorf("--wal-dir %s: %w (stop the processor using it first)", f.walDir, err)
	}
	defer log.Close()
	st, err := processor.ReplayWAL(ctx, pc, store, log, f.from)
	if err != nil {
		return config.Rename(err, f.fieldFlags)
	}
	fmt.Fprintf(stdout, "replayed %d batches, %d records, %d events (%d rejected) into %d rooms; %d stable lists changed (pending, published by the processor on the room's next event)\n",
		st.Batches, st.Records, st.Events, st.Rejected, st.Rooms, st.Changed)
	return nil
}
