// Command rostrum is the real-time ranking engine: it consumes meeting
// callbacks from Kafka, keeps rankings in Redis and publishes each room's
// stable top-N. See `rostrum help` and the README.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

const usage = `rostrum — real-time ranking engine (Kafka → Redis → stable top-N)

Usage:
  rostrum run    [flags]   consume callbacks and keep the meeting rankings
  rostrum check  [flags]   verify brokers, topics, group, Redis and scripts for run's flags, consuming nothing
                           (--offline: the configuration only, connecting to nothing)
  rostrum gateway [flags]  HTTP callbacks into the callback topics, routed by room to environments
  rostrum demo   [flags]   everything embedded: Kafka broker, Redis, a simulated meeting
  rostrum wal    inspect | replay   look into a WAL directory, or re-apply it to Redis
  rostrum boards prune     list (--delete: delete) the keys of boards removed from the config
  rostrum codec  explain   print the score layouts and a few encoded examples
  rostrum dlq    inspect | redrive   count and sample the DLQ, or re-produce its records to their topics
  rostrum version          version, commit, Go version and build time
  rostrum help             this text
  rostrum help config --markdown   every flag with its variable, YAML key and default
  rostrum help config --schema     the JSON Schema of the --config file

Each command's flags: rostrum <command> -h (the essential ones by group; --help-all: every one)
The benchmarks and the meeting simulator are developer tools: rostrum-dev help
`

// devCommands are the commands that moved to the developer command,
// rostrum-dev: rostrum answers them with where they went.
var devCommands = map[string]bool{"bench": true, "flicker": true, "simulate": true}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "rostrum:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(exitUsage)
	}
}

// Main runs one command; it returns when the command is done or ctx ends.
// SIGHUP never stops it: run, demo and gateway re-read their credential
// files on it, every other command ignores it (reload.go).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	defer catchHangups()()
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	if done, err := commandHelp(args, stdout); done {
		return err // grouped -h, --help-all, --help-group (help.go)
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stderr)
	case "check":
		return cmdCheck(ctx, args[1:], stdout, stderr)
	case "dlq":
		return cmdDLQ(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		return cmdVersion(stdout)
	case "gateway":
		return cmdGateway(ctx, args[1:], stderr)
	case "demo":
		return cmdDemo(ctx, args[1:], stdout, stderr)
	case "wal":
		return cmdWAL(ctx, args[1:], stdout, stderr)
	case "boards":
		return cmdBoards(ctx, args[1:], stdout, stderr)
	case "codec":
		return cmdCodec(args[1:], stdout)
	case "help", "-h", "--help":
		return cmdHelp(args[1:], stdout)
	default:
		if devCommands[args[0]] {
			return fmt.Errorf("%s is a developer tool, not part of rostrum: run `rostrum-dev %s` (make build builds bin/rostrum-dev)",
				args[0], strings.Join(args, " "))
		}
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
