package main

import (
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/control"
	"github.com/rostrumhq/rostrum/internal/cli"
)

// faultEnv, when set to "control-step", makes the process exit right after
// a control write's Redis step, before its Kafka produce: the crash the
// outbox exists for; "control-published", right after Kafka acknowledged
// the record, before its outbox entry is deleted: the crash the recovery's
// lookup exists for. Injected by tests.
const faultEnv = "ROSTRUM_FAULT"

// controlFlags are the settings of the recording control and layout API.
type controlFlags struct {
	tokenFile                  string
	insecure                   bool
	replicas, history          int
	maxBody                    int64
	replicaTimeout, lease      time.Duration
	produceTimeout, sweepEvery time.Duration
	idempotencyTTL             time.Duration
}

func (c *controlFlags) register(fs *cli.FlagSet) {
	fs.Group("http").StringVar(&c.tokenFile, "control-token-file", "", "bearer tokens of the control API (/v1/rooms/{room}/recording, …/layout), one a line, each at least 16 bytes; re-read on SIGHUP; without it the API answers 403")
	fs.Group("http").Tuning().BoolVar(&c.insecure, "control-insecure", false, "serve the control API without tokens (demo only; logged as a warning)")
	fs.Group("http").Tuning().IntVar(&c.replicas, "control-replicas", 0, "Redis replicas that must confirm a control change (WAIT) before it is answered")
	fs.Group("http").Tuning().DurationVar(&c.replicaTimeout, "control-replica-timeout", time.Second, "how long a control change waits for --control-replicas")
	fs.Group("http").Tuning().IntVar(&c.history, "control-history", 10, "finished recordings kept per room")
	fs.Group("limits").Tuning().Int64Var(&c.maxBody, "control-max-body-bytes", 64<<10, "largest control request body, bytes (layout parameters, start parameters)")
	fs.Group("http").Tuning().DurationVar(&c.lease, "control-lease", 30*time.Second, "how long an unpublished control change stays its writer's before another instance looks it up on its topic and publishes it if missing; must exceed --control-produce-timeout")
	fs.Group("http").Tuning().DurationVar(&c.produceTimeout, "control-produce-timeout", 10*time.Second, "how long a control request waits for Kafka to acknowledge its command")
	fs.Group("http").Tuning().DurationVar(&c.sweepEvery, "control-sweep-interval", 5*time.Second, "how often to look for control changes left unpublished by a crash")
	fs.Group("http").Tuning().DurationVar(&c.idempotencyTTL, "control-idempotency-ttl", 24*time.Hour, "how long the answer to an Idempotency-Key is kept")
}

// tokens reads --control-token-file; nil when it is not set.
func (c *controlFlags) tokens() (*auth.Tokens, error) {
	if c.tokenFile == "" {
		return nil, nil
	}
	return loadTokens("--control-token-file", c.tokenFile)
}

// options are the control API's options of env, without its tokens.
func (c *controlFlags) options(topics control.Topics, env string, roomTTL time.Duration, lg *zap.Logger) control.Config {
	return control.Config{
		Env: env, CommandsTopic: topics.Commands, LayoutTopic: topics.Layout,
		RoomTTL: roomTTL, History: c.history, MaxBodyBytes: c.maxBody,
		Replicas: c.replicas, ReplicaTimeout: c.replicaTimeout,
		Lease: c.lease, ProduceTimeout: c.produceTimeout, SweepInterval: c.sweepEvery,
		IdempotencyTTL: c.idempotencyTTL, Insecure: c.insecure, Logger: lg,
	}
}

// service builds the control API of env on rc, guarded by tokens (see
// tokens), producing with a client of its own to brokers.
func (c *controlFlags) service(rc redis.UniversalClient, tokens *auth.Tokens, brokers []string, kopts []kgo.Opt, topics control.Topics, env string, roomTTL time.Duration, lg *zap.Logger) (*control.Service, func(), error) {
	o := c.options(topics, env, roomTTL, lg)
	o.Tokens = tokens
	if f := os.Getenv(faultEnv); f == "control-step" || f == "control-published" {
		at := strings.TrimPrefix(f, "control-")
		o.Fault = func(point string) error {
			if point == at {
				os.Exit(86)
			}
			return nil
		}
	}
	// A record is never failed by the client once sent, but one not yet
	// sent when the request gives up is dropped, and the broker answers a
	// sent one within the same time: so a record whose publisher gave up or
	// died is on the topic, or never will be, when its lease ends and a
	// recovery looks for it (control/outbox.go).
	pr, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...),
		kgo.RecordDeliveryTimeout(c.produceTimeout), kgo.ProduceRequestTimeout(c.produceTimeout)}, kopts...)...)
	if err != nil {
		return nil, nil, err
	}
	svc, err := control.New(rc, pr, o)
	if err != nil {
		pr.Close()
		return nil, nil, err
	}
	return svc, pr.Close, nil
}
