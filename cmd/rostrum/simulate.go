package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/rostrumhq/rostrum/demo"
)

func cmdSimulate(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	env := fs.String("env", "demo", "environment: the simulator writes {env}.callbacks.*")
	rooms := fs.Int("rooms", 12, "simulated rooms")
	members := fs.Int("members", 60, "members of the largest rooms")
	var sec securityFlags
	sec.registerKafka(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applySecurityEnv(fs); err != nil {
		return err
	}
	kopts, err := sec.kafkaOpts()
	if err != nil {
		return err
	}
	for _, w := range sec.warnings {
		fmt.Fprintln(stderr, "rostrum simulate: warning:", w)
	}
	err = demo.Feed(ctx, demo.FeedConfig{Brokers: splitList(*brokers), Env: *env, Rooms: *rooms, MaxMembers: *members, KafkaOpts: kopts})
	return sec.kafkaError(err)
}
