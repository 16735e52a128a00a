package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `rostrum-dev — rostrum's developer tools: benchmarks and a meeting simulator
(operators deploy rostrum; this binary is not part of a release's image)

Usage:
  rostrum-dev bench    [flags]   end-to-end benchmark: rostrum vs the naive design vs raw Redis
  rostrum-dev bench --workload gateway [flags]
                                 the callback gateway over HTTP vs a raw franz-go producer
  rostrum-dev bench --flicker [flags]
                                 how much the shown top-N flickers: raw vs seed merge vs hysteresis
  rostrum-dev flicker  [flags]   the same as bench --flicker
  rostrum-dev simulate [flags]   produce a simulated meeting to a Kafka cluster (or POST it to a gateway)
  rostrum-dev help               this text

Each command's flags: rostrum-dev <command> -h
The production commands (run, gateway, demo, check, ...): rostrum help
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	child, err := gatewayChild(ctx)
	if !child {
		err = Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "rostrum-dev:", err)
		os.Exit(1)
	}
}

// Main runs one command; it returns when the command is done or ctx ends.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "bench":
		return cmdBench(ctx, args[1:], stdout, stderr)
	case "flicker":
		return cmdFlicker(args[1:], stdout, stderr)
	case "simulate":
		return cmdSimulate(ctx, args[1:], stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[0])
	}
}
