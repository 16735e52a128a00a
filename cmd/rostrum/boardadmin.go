package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/web"
)

// boardAdminFlags are the settings of the board administration route
// (POST /v1/boards/{name}/members/{member}/remove).
type boardAdminFlags struct {
	tokenFile      string
	produceTimeout time.Duration
}

func (f *boardAdminFlags) register(fs *cli.FlagSet) {
	fs.Group("leaderboards").StringVar(&f.tokenFile, "admin-token-file", "", "bearer tokens of the board administration route (POST /v1/boards/{name}/members/{member}/remove), one a line, each at least 16 bytes; re-read on SIGHUP; without it the route answers 403")
	fs.Group("leaderboards").Tuning().DurationVar(&f.produceTimeout, "admin-produce-timeout", 10*time.Second, "how long a board administration request waits for Kafka to acknowledge its event")
}

// tokens reads --admin-token-file; nil when it is not set.
func (f *boardAdminFlags) tokens() (*auth.Tokens, error) {
	if f.tokenFile == "" {
		return nil, nil
	}
	if f.produceTimeout < time.Second {
		return nil, fmt.Errorf("--admin-produce-timeout must be at least 1s (the Kafka client's least delivery timeout), got %s", f.produceTimeout)
	}
	return loadTokens("--admin-token-file", f.tokenFile)
}

// callbackProducer produces to one topic with a client of its own and
// waits for each record's acknowledgement.
type callbackProducer struct {
	cl    *kgo.Client
	topic string
}

var _ web.CallbackProducer = (*callbackProducer)(nil)

// newCallbackProducer opens a producer of topic. A record the client has
// not acknowledged within timeout fails (kgo.RecordDeliveryTimeout).
func newCallbackProducer(brokers []string, kopts []kgo.Opt, topic string, timeout time.Duration) (*callbackProducer, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.RecordDeliveryTimeout(timeout)}, kopts...)...)
	if err != nil {
		return nil, err
	}
	return &callbackProducer{cl: cl, topic: topic}, nil
}

func (p *callbackProducer) ProduceCallback(ctx context.Context, key, value []byte) error {
	r := &kgo.Record{Topic: p.topic, Key: key, Value: value}
	return p.cl.ProduceSync(ctx, r).FirstErr()
}

func (p *callbackProducer) Close() { p.cl.Close() }
