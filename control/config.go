package control

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/auth"
)

// Config configure a Service.
type Config struct {
	Env            string        // environment, part of every key; required
	CommandsTopic  string        // where recording commands go; required ({env}.recording.commands)
	LayoutTopic    string        // where layout changes go, compacted; required ({env}.rooms.layout)
	RoomTTL        time.Duration // an idle room's recording state and its layout expire after this; default 24h
	History        int           // finished recordings kept per room; default 10
	MaxBodyBytes   int64         // largest request body (layout or start parameters), 413 beyond; default 64 KiB
	Replicas       int           // replicas that must confirm a change (WAIT) before it is answered; default 0
	ReplicaTimeout time.Duration // how long WAIT waits for them; default 1s
	// Lease is how long an outbox entry belongs to the request that wrote
	// it (or the recovery that claimed it); after that a sweep or another
	// request looks it up on its topic and publishes it if it is not there.
	// It must exceed ProduceTimeout: a publisher begins a produce only
	// within the first half of what the lease leaves beyond ProduceTimeout,
	// and the second half is the time its last send has to land on the
	// topic before anyone looks. Default 30s.
	Lease          time.Duration
	ProduceTimeout time.Duration // how long a request waits for Kafka's acknowledgement; default 10s
	SweepInterval  time.Duration // how often Run looks for outbox entries left behind; default 5s
	IdempotencyTTL time.Duration // how long an Idempotency-Key's answer is kept; default 24h

	// Tokens are the bearer tokens every control request must carry. With
	// none, every request is refused (403) unless Insecure.
	Tokens   *auth.Tokens
	Insecure bool // serve without tokens (the demo); New logs a warning

	// Lookup tells a recovery whether a record left in the outbox is
	// already on its topic. nil: a KafkaLookup of the Producer, which must
	// then be a *kgo.Client.
	Lookup Lookup

	// Fault, when set, is called at the named points of a write: "step"
	// after the Redis step and before the Kafka produce; "published" after
	// Kafka acknowledged the record and before its outbox entry is deleted.
	// A non-nil error abandons the request there, as a crash would (tests);
	// a hook may also end the process.
	Fault func(point string) error

	Logger *zap.Logger // nil: no logs
}

func (o *Config) setDefaults() {
	if o.RoomTTL == 0 {
		o.RoomTTL = 24 * time.Hour
	}
	if o.History == 0 {
		o.History = 10
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 64 << 10
	}
	if o.ReplicaTimeout == 0 {
		o.ReplicaTimeout = time.Second
	}
	if o.Lease == 0 {
		o.Lease = 30 * time.Second
	}
	if o.ProduceTimeout == 0 {
		o.ProduceTimeout = 10 * time.Second
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = 5 * time.Second
	}
	if o.IdempotencyTTL == 0 {
		o.IdempotencyTTL = 24 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Validate reports the first setting out of range, naming its flag.
func (o *Config) Validate() error {
	switch {
	case o.Env == "":
		return errors.New("control: Env is required")
	case o.CommandsTopic == "" || o.LayoutTopic == "":
		return errors.New("control: CommandsTopic and LayoutTopic are required")
	case o.RoomTTL < time.Second:
		return fmt.Errorf("--room-ttl must be at least 1s, got %s", o.RoomTTL)
	case o.History < 1 || o.History > 1000:
		return fmt.Errorf("--control-history must be between 1 and 1000, got %d", o.History)
	case o.MaxBodyBytes < 2 || o.MaxBodyBytes > 16<<20:
		return fmt.Errorf("--control-max-body-bytes must be between 2 bytes and 16 MiB, got %d", o.MaxBodyBytes)
	case o.Replicas < 0:
		return fmt.Errorf("--control-replicas must not be negative, got %d", o.Replicas)
	case o.ReplicaTimeout < time.Millisecond:
		return fmt.Errorf("--control-replica-timeout must be at least 1ms, got %s", o.ReplicaTimeout)
	case o.ProduceTimeout < time.Second:
		// franz-go's RecordDeliveryTimeout, which it bounds, takes no less.
		return fmt.Errorf("--control-produce-timeout must be at least 1s, got %s", o.ProduceTimeout)
	case o.Lease <= o.ProduceTimeout:
		return fmt.Errorf("--control-lease (%s) must be longer than --control-produce-timeout (%s)", o.Lease, o.ProduceTimeout)
	case o.SweepInterval < 10*time.Millisecond:
		return fmt.Errorf("--control-sweep-interval must be at least 10ms, got %s", o.SweepInterval)
	case o.IdempotencyTTL < time.Second:
		return fmt.Errorf("--control-idempotency-ttl must be at least 1s, got %s", o.IdempotencyTTL)
	}
	return nil
}

// Topics are the control API's topics of one environment.
type Topics struct {
	Commands string // {prefix}{env}.recording.commands, key room id
	Layout   string // {prefix}{env}.rooms.layout, key room id, compacted
}

// TopicsFor returns the control topics of env with prefix.
func TopicsFor(prefix, env string) Topics {
	return Topics{Commands: prefix + env + ".recording.commands", Layout: prefix + env + ".rooms.layout"}
}

// Configs are the topic configs each topic is created with: the layout
// topic is compacted (a subscriber needs only each room's latest layout).
func (t Topics) Configs() map[string]map[string]*string {
	compact := "compact"
	return map[string]map[string]*string{
		t.Commands: nil,
		t.Layout:   {"cleanup.policy": &compact},
	}
}
