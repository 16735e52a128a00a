package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/internal/cli"
)

const boardsUsage = `usage: rostrum boards prune [--config F] [--redis A] [--env E] [--delete]
  lists the Redis keys of leaderboards no longer in the config file's boards:
  (removed boards, whose keys nothing else deletes); --delete deletes them`

// cmdBoards runs `rostrum boards …`.
func cmdBoards(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(boardsUsage)
	}
	switch args[0] {
	case "prune":
		return boardsPrune(ctx, args[1:], stdout, stderr)
	default:
		return fmt.Errorf("unknown boards command %q\n%s", args[0], boardsUsage)
	}
}

// pruneFlags are the settings of `rostrum boards prune`: the environment,
// Redis and the config file's boards.
type pruneFlags struct {
	commonFlags
	env    string
	redis  redisFlags
	delete bool
}

func (f *pruneFlags) register(fs *cli.FlagSet) {
	f.commonFlags.register(fs)
	registerEnv(fs, "redis", &f.env)
	f.redis.register(fs)
	f.sec.RegisterRedis(fs)
	fs.Group("command").SwitchVar(&f.delete, "delete", "delete the keys found (default: only list them); taken on the command line only, never from a variable or the config file")
}

// boardsPrune lists, and with --delete deletes, the keys of boards that
// are not in the configuration. Without --delete it changes nothing.
func boardsPrune(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("boards prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f pruneFlags
	f.register(fs)
	if err := f.parse(fs, args, nil, runKeys()); err != nil {
		return err
	}
	if _, err := f.logger(stderr); err != nil {
		return err
	}
	if err := f.redis.check(f.sec.Sentinel.On()); err != nil {
		return err
	}
	boards, err := compileBoards(f.boards, f.boardsSource)
	if err != nil {
		return err
	}
	rc, err := f.openRedis(ctx, f.redis.redis)
	if err != nil {
		return err
	}
	defer rc.Close()
	orphans, err := board.Orphans(ctx, rc, f.env, boards)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(orphans))
	for name := range orphans {
		names = append(names, name)
	}
	sort.Strings(names)
	keys := 0
	for _, name := range names {
		fmt.Fprintf(stdout, "board %s: %d keys (not in the configuration)\n", name, len(orphans[name]))
		keys += len(orphans[name])
	}
	switch {
	case len(names) == 0:
		fmt.Fprintf(stdout, "no keys of removed boards in environment %s\n", f.env)
	case f.delete:
		n, err := board.DeleteKeys(ctx, rc, orphans)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %d keys of %d removed boards\n", n, len(names))
	default:
		fmt.Fprintf(stdout, "%d keys of %d removed boards; run again with --delete to delete them\n", keys, len(names))
	}
	return nil
}
