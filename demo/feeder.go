package demo

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/internal/trace"
)

// FeedConfig shapes the simulated meeting load.
type FeedConfig struct {
	Brokers    []string
	Env        string
	Rooms      int // default 12
	MaxMembers int // size of the largest rooms; default 60
	// KafkaOpts are added to the producer's options: TLS and SASL for
	// brokers that need them.
	KafkaOpts []kgo.Opt
	// Gateway, when set, is the base URL of a rostrum gateway
	// (http://host:port): the callbacks are POSTed to it, as the meeting
	// system's producers do, instead of produced to Kafka; Brokers and Env
	// are then unused (the gateway routes by room id). Token is its bearer
	// token, if it wants one.
	Gateway, Token string
	// RoomPrefix begins every room id ("gray-" gives "gray-r-3"), so that a
	// gateway routes the rooms to an environment. Default: none.
	RoomPrefix string
}

// Feed produces a simulated meeting to the env's callback topics in real
// time (each record when the wall clock reaches its event time) until ctx
// ends: volume indications in bursts (often several speakers in one array
// record), mute/unmute, cameras, joins and leaves, role changes, and a small
// share of late, duplicate and bad records.
func Feed(ctx context.Context, cfg FeedConfig) error {
	if cfg.Rooms == 0 {
		cfg.Rooms = 12
	}
	if cfg.MaxMembers == 0 {
		cfg.MaxMembers = 60
	}
	var send func(source string, key, value []byte) error
	if cfg.Gateway != "" {
		p := newPoster(cfg.Gateway, cfg.Token)
		send = func(source string, _, value []byte) error { return p.post(ctx, source, value) }
	} else {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ProducerLinger(5 * time.Millisecond)}, cfg.KafkaOpts...)...)
		if err != nil {
			return err
		}
		defer cl.Close()
		send = func(source string, key, value []byte) error {
			cl.Produce(ctx, &kgo.Record{Topic: cfg.Env + ".callbacks." + source, Key: key, Value: value}, nil)
			return nil
		}
	}
	for seed := uint64(1); ctx.Err() == nil; seed++ {
		tc := trace.DefaultConfig(seed)
		tc.Rooms, tc.MaxMembers, tc.Records = cfg.Rooms, cfg.MaxMembers, 20000
		tc.RoomPrefix = cfg.RoomPrefix
		tc.BaseTS = time.Now().UnixMilli()
		for _, r := range trace.Generate(tc) {
			ts := tc.BaseTS
			if len(r.Events) > 0 {
				ts = r.Events[0].TS
			}
			if d := time.Until(time.UnixMilli(ts)); d > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(d):
				}
			}
			if err := send(r.Topic, []byte(r.Key), r.Value); err != nil {
				return err
			}
		}
	}
	return nil
}
