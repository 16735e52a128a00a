package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rostrumhq/rostrum/bench"
	"github.com/rostrumhq/rostrum/internal/cli"
)

// wantsGatewayBench reports whether args ask for `rostrum-dev bench
// --workload gateway`, which has flags of its own.
func wantsGatewayBench(args []string) bool {
	for i, a := range args {
		switch a {
		case "--workload=gateway", "-workload=gateway":
			return true
		case "--workload", "-workload":
			if i+1 < len(args) && args[i+1] == "gateway" {
				return true
			}
		case "--":
			return false
		}
	}
	return false
}

// cmdBenchGateway runs the gateway benchmark (bench.RunGateway).
func cmdBenchGateway(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("bench --workload gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.String("workload", "gateway", "gateway: the callback gateway over HTTP vs a raw franz-go producer")
	requests := fs.Int("requests", 200_000, "single-object callbacks of each flat-out run")
	conns := fs.Int("connections", 64, "keep-alive HTTP connections (and concurrent synchronous raw producers)")
	rate := fs.Float64("rate", 0, "requests/s of the fixed-rate latency run; 0: half the gateway's flat-out rate")
	rateSeconds := fs.Float64("rate-seconds", 10, "length of the fixed-rate run; 0: skip it")
	brokers := fs.String("brokers", "", "Kafka seed brokers, comma-separated; empty: an in-process broker")
	inProcess := fs.Bool("gateway-in-process", false, "run the gateway inside the benchmark's process, not in a child process of its own: its CPU and allocations then count with the HTTP clients' and the broker's, and the gw columns are left out")
	profileDir := fs.String("gateway-profile-dir", "", "directory where the gateway's child process writes cpu.pprof and allocs.pprof (go tool pprof); empty: none")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of a table")
	var sec cli.Security
	sec.RegisterKafka(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cli.ApplySecurityEnv(fs); err != nil {
		return err
	}
	kopts, err := sec.KafkaOpts()
	if err != nil {
		return err
	}
	switch {
	case *brokers == "" && sec.KafkaSet:
		return errors.New("--kafka-sasl and --kafka-tls* need --brokers: the in-process broker has neither")
	case *requests < 1:
		return fmt.Errorf("--requests must be at least 1, got %d", *requests)
	case *conns < 1:
		return fmt.Errorf("--connections must be at least 1, got %d", *conns)
	case *profileDir != "" && *inProcess:
		return errors.New("--gateway-profile-dir needs the gateway in a child process: drop --gateway-in-process")
	case *rateSeconds < 0:
		return fmt.Errorf("--rate-seconds must not be negative, got %v", *rateSeconds)
	}
	cfg := bench.GatewayConfig{Requests: *requests, Connections: *conns, Rate: *rate, RateFor: seconds(*rateSeconds),
		Brokers: cli.SplitList(*brokers), KafkaOpts: kopts, Progress: stderr, InProcess: *inProcess, ChildProfileDir: *profileDir}
	cfg.ChildKafkaArgs, cfg.ChildEnv = childKafkaFlags(fs)
	if *rateSeconds == 0 {
		cfg.RateFor = -1
	}
	rep, err := bench.RunGateway(ctx, cfg)
	if err != nil {
		return cli.ScrubError(err, sec.Secrets()...)
	}
	return writeReport(stdout, *asJSON, rep)
}

// childKafkaFlags returns the --kafka-* flags given to this process (on
// the command line or through ROSTRUM_KAFKA_*), for the gateway child to
// connect as this process does: the password as an environment variable
// (env), never an argument, and every other flag as an argument (args).
func childKafkaFlags(fs *cli.FlagSet) (args, env []string) {
	fs.Visit(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "kafka-") {
			return
		}
		if s, ok := f.Value.(*cli.Secret); ok {
			env = append(env, cli.EnvName(f.Name)+"="+s.Reveal())
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args, env
}

// gatewayChild runs this process as the gateway benchmark's child when
// bench.RunGateway started it so (bench.GatewayChildEnv), with the Kafka
// flags it was handed, and reports whether it did. Errors, scrubbed of the
// password, are its exit status and stderr, which the parent reports.
func gatewayChild(ctx context.Context) (child bool, err error) {
	c, child, err := bench.LookupGatewayChild()
	if !child || err != nil {
		return child, err
	}
	fs := cli.NewFlagSet("bench gateway child", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var sec cli.Security
	sec.RegisterKafka(fs)
	if err := fs.Parse(c.KafkaArgs); err != nil {
		return true, err
	}
	if err := cli.ApplySecurityEnv(fs); err != nil {
		return true, err
	}
	kopts, err := sec.KafkaOpts()
	if err == nil {
		err = bench.GatewayChildMain(ctx, c, kopts, os.Stdin, os.Stdout)
	}
	return true, cli.ScrubError(err, sec.Secrets()...)
}
