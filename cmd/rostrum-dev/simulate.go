package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rostrumhq/rostrum/demo"
	"github.com/rostrumhq/rostrum/internal/cli"
)

// simulateFlags are the settings of `rostrum-dev simulate`.
type simulateFlags struct {
	brokers, env       string
	rooms, members     int
	gateway, tokenFile string
	roomPrefix         string
	sec                cli.Security
}

func (f *simulateFlags) register(fs *cli.FlagSet) {
	fs.StringVar(&f.brokers, "brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	fs.StringVar(&f.env, "env", "demo", "environment: the simulator writes {env}.callbacks.*")
	fs.IntVar(&f.rooms, "rooms", 12, "simulated rooms")
	fs.IntVar(&f.members, "members", 60, "members of the largest rooms")
	fs.StringVar(&f.gateway, "gateway", "", "base URL of a rostrum gateway (http://host:8081): POST the callbacks to it instead of producing to Kafka")
	fs.StringVar(&f.tokenFile, "gateway-token-file", "", "with --gateway: file whose first token is sent as Authorization: Bearer")
	fs.StringVar(&f.roomPrefix, "room-prefix", "", "begins every room id (gray- gives gray-r-3), for a gateway's routes")
	f.sec.RegisterKafka(fs)
}

func cmdSimulate(ctx context.Context, args []string, stderr io.Writer) error {
	fs := cli.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f simulateFlags
	f.register(fs)
	sec := &f.sec
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cli.ApplySecurityEnv(fs); err != nil {
		return err
	}
	token, err := firstToken(f.tokenFile)
	if err != nil {
		return err
	}
	if f.gateway != "" {
		return demo.Feed(ctx, demo.FeedConfig{Rooms: f.rooms, MaxMembers: f.members, Gateway: f.gateway, Token: token, RoomPrefix: f.roomPrefix})
	}
	kopts, err := sec.KafkaOpts()
	if err != nil {
		return err
	}
	for _, w := range sec.Warnings {
		fmt.Fprintln(stderr, "rostrum-dev simulate: warning:", w)
	}
	err = demo.Feed(ctx, demo.FeedConfig{Brokers: cli.SplitList(f.brokers), Env: f.env, Rooms: f.rooms, MaxMembers: f.members, KafkaOpts: kopts, RoomPrefix: f.roomPrefix})
	return sec.KafkaError(err)
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
