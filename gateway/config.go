package gateway

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/route"
)

// Sources are the callback sources, the last segment of the path and of
// the topic name.
var Sources = []string{"rtc", "client", "signal"}

// DefaultSignatureHeader is the header that carries an HMAC signature of
// the body when Config.SignatureHeader is empty.
const DefaultSignatureHeader = "X-Rostrum-Signature"

// Config configures a Gateway. Zero values take the defaults noted.
type Config struct {
	// Client produces the records; required. It must be built with
	// ProducerOpts (acks=all, idempotent), which NewProducer does.
	Client *kgo.Client
	// Routes maps room ids to environments; required, and it must route
	// somewhere (a rule or a default).
	Routes *route.Table
	// TopicPrefix is prepended to every topic name; default none.
	TopicPrefix string

	// Tokens, when set, are the bearer tokens a request may carry.
	Tokens *auth.Tokens
	// Secrets, when set, are the HMAC-SHA256 secrets a body signature
	// (in SignatureHeader) may be made with.
	Secrets *auth.Secrets
	// SignatureHeader names the header of the body signature; default
	// DefaultSignatureHeader.
	SignatureHeader string
	// Insecure lets a gateway without Tokens and Secrets accept every
	// request. Without it, New refuses a Config with no credential.
	Insecure bool

	// MaxBodyBytes is the largest body accepted (413 above); default 1 MiB.
	MaxBodyBytes int64
	// MaxInflight is how many callback requests may be pending at once;
	// one more is a 503 with Retry-After. Default 1024.
	MaxInflight int
	// ProduceTimeout bounds the wait for the brokers' acknowledgements
	// (503 after it); default 10s. The client should carry a
	// RecordDeliveryTimeout no longer than it (NewProducer sets one).
	ProduceTimeout time.Duration

	Metrics *Metrics    // default NewMetrics()
	Logger  *zap.Logger // default zap.NewNop()
}

// Defaults of Config.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxInflight    = 1024
	DefaultProduceTimeout = 10 * time.Second
)

// ErrNoCredential is returned by Validate for a Config with neither tokens
// nor HMAC secrets and without Insecure.
var ErrNoCredential = errors.New("no credential configured: give --gateway-token-file or --gateway-hmac-secret-file (or --gateway-insecure to accept unauthenticated callbacks)")

func (c *Config) withDefaults() {
	if c.SignatureHeader == "" {
		c.SignatureHeader = DefaultSignatureHeader
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxInflight == 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	if c.ProduceTimeout == 0 {
		c.ProduceTimeout = DefaultProduceTimeout
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Validate checks c after the defaults; its messages name the flag.
func (c *Config) Validate() error {
	switch {
	case c.Client == nil:
		return errors.New("gateway: Config.Client is nil")
	case c.Routes.Empty():
		return errors.New("--route or --route-default is required: the gateway must know which environment a room belongs to")
	case c.Tokens == nil && c.Secrets == nil && !c.Insecure:
		return ErrNoCredential
	case c.MaxBodyBytes < 2:
		return fmt.Errorf("--max-body-bytes must be at least 2, got %d", c.MaxBodyBytes)
	case c.MaxInflight < 1:
		return fmt.Errorf("--max-inflight must be at least 1, got %d", c.MaxInflight)
	case c.ProduceTimeout <= 0:
		return fmt.Errorf("--produce-timeout must be positive, got %s", c.ProduceTimeout)
	}
	return nil
}

// ProducerOpts are the kgo options every gateway producer carries: acks
// from all in-sync replicas, idempotence (kgo's default, never disabled
// here), records failed after timeout rather than retried forever, no
// linger (a request waits for its records), and batches large enough for
// a record of maxBodyBytes.
func ProducerOpts(timeout time.Duration, maxBodyBytes int64) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(timeout),
		kgo.ProducerLinger(0),
	}
	// A record is at most the body plus the headers; kgo's default batch
	// limit (about 1 MB) is below the default body limit (1 MiB).
	if need := maxBodyBytes + 4096; need > 1_000_012 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(min(need, 1<<30))))
	}
	return opts
}

// Topic is the callback topic of env and source.
func Topic(prefix, env, source string) string { return prefix + env + ".callbacks." + source }

// Topics lists the callback topics of every environment routes can send a
// room to, the topics the gateway needs.
func Topics(prefix string, routes *route.Table) []string {
	var out []string
	for _, env := range routes.Envs() {
		for _, s := range Sources {
			out = append(out, Topic(prefix, env, s))
		}
	}
	return out
}
