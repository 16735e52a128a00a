package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

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
	// The environment fills the Kafka security settings (ROSTRUM_KAFKA_SASL,
	// ROSTRUM_KAFKA_PASSWORD, …) as it does for `rostrum run`; the other
	// flags keep ignoring it, so a shell's ROSTRUM_ENV=prod set for `run`
	// does not send simulated load to prod.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] || !strings.HasPrefix(f.Name, "kafka-") {
			return
		}
		env := "ROSTRUM_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %v", env, e)
			}
		}
	})
	if err != nil {
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
