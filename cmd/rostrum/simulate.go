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
	gw := fs.String("gateway", "", "base URL of a rostrum gateway (http://host:8081): POST the callbacks to it instead of producing to Kafka")
	tokenFile := fs.String("gateway-token-file", "", "with --gateway: file whose first token is sent as Authorization: Bearer")
	roomPrefix := fs.String("room-prefix", "", "begins every room id (gray- gives gray-r-3), for a gateway's routes")
	var sec securityFlags
	sec.registerKafka(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applySecurityEnv(fs); err != nil {
		return err
	}
	token, err := firstToken(*tokenFile)
	if err != nil {
		return err
	}
	if *gw != "" {
		return demo.Feed(ctx, demo.FeedConfig{Rooms: *rooms, MaxMembers: *members, Gateway: *gw, Token: token, RoomPrefix: *roomPrefix})
	}
	kopts, err := sec.kafkaOpts()
	if err != nil {
		return err
	}
	for _, w := range sec.warnings {
		fmt.Fprintln(stderr, "rostrum simulate: warning:", w)
	}
	err = demo.Feed(ctx, demo.FeedConfig{Brokers: splitList(*brokers), Env: *env, Rooms: *rooms, MaxMembers: *members, KafkaOpts: kopts, RoomPrefix: *roomPrefix})
	return sec.kafkaError(err)
}

// firstToken returns the first token of a token file (the format of
// --gateway-token-file), or "" for no file.
func firstToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--gateway-token-file: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return line, nil
		}
	}
	return "", fmt.Errorf("--gateway-token-file %s holds no token", path)
}
