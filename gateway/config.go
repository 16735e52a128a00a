package gateway

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/route"
)

// Sources are the callback sources, the last segment of the path and of
// the topic name.
var Sources = []string{"rtc", "client", "signal"}

// DefaultSignatureHeader is the header that carries an HMAC signature
// when Config.SignatureHeader is empty.
const DefaultSignatureHeader = "X-Rostrum-Signature"

// DefaultTimestampHeader is the header that carries the Unix time, in
// seconds, of a timestamped signature when Config.TimestampHeader is
// empty.
const DefaultTimestampHeader = "X-Rostrum-Timestamp"

// Signature modes (Config.SignatureMode), see docs/DESIGN.md §11.
const (
	// SignatureTimestamped (recommended, the default): the signature is
	// the HMAC-SHA256 of timestamp "." method "." path "." body
	// (auth.SignRequest), the timestamp in TimestampHeader and within
	// MaxSkew of the gateway's clock. A request replayed after the window,
	// or a body sent to another route, is refused.
	SignatureTimestamped = "timestamped"
	// SignatureBody: the signature is the HMAC-SHA256 of the body alone
	// (auth.SignHMAC), for senders that sign that way. It cannot stop a
	// replay of the request, nor its body sent to another route.
	SignatureBody = "body"
)

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
	// Secrets, when set, are the HMAC-SHA256 secrets a signature (in
	// SignatureHeader) may be made with. A request that carries a
	// signature while no secret is configured is refused before its body
	// is read.
	Secrets *auth.Secrets
	// SignatureMode is SignatureTimestamped or SignatureBody; default
	// SignatureTimestamped.
	SignatureMode string
	// SignatureHeader names the header of the signature; default
	// DefaultSignatureHeader.
	SignatureHeader string
	// TimestampHeader names the header of a timestamped signature's Unix
	// time in seconds; default DefaultTimestampHeader.
	TimestampHeader string
	// MaxSkew is how far a timestamp may be from the gateway's clock, either
	// way; default 5m.
	MaxSkew time.Duration
	// Insecure lets a gateway without Tokens and Secrets accept every
	// request. Without it, New refuses a Config with no credential.
	Insecure bool

	// MaxBodyBytes is the largest body accepted (413 above); default 1 MiB.
	MaxBodyBytes int64
	// MaxInflight is how many callback requests, their credentials
	// checked, may be pending at once; one more is a 503 with Retry-After.
	// As many signed requests again may be reading their body to have
	// their signature checked. Default 1024.
	MaxInflight int
	// ReadTimeout bounds the reading of a request, headers and body: a body
	// not in by then is a 408. Default 10s.
	ReadTimeout time.Duration
	// ProduceTimeout bounds the wait for the brokers' acknowledgements
	// (503 after it); default 10s. The client should carry a
	// RecordDeliveryTimeout no longer than it (NewProducer sets one).
	ProduceTimeout time.Duration
	// ShutdownTimeout is how long requests in flight may finish once
	// Serve's context ends (SIGTERM); what is left then is cut, so the
	// stop takes at most about this long. Default 15s: a request waiting
	// for its acknowledgements (ProduceTimeout) gets them.
	ShutdownTimeout time.Duration

	Metrics *Metrics    // default NewMetrics()
	Logger  *zap.Logger // default zap.NewNop()
	// TracerProvider records a span per callback request (docs/tracing.md);
	// nil records none, and every callback record still carries a
	// traceparent header. Default nil.
	TracerProvider trace.TracerProvider
}

// Defaults of Config.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxInflight    = 1024
	DefaultProduceTimeout = 10 * time.Second
	DefaultReadTimeout    = 10 * time.Second
	DefaultMaxSkew        = 5 * time.Minute
	DefaultShutdown       = 15 * time.Second
)

// ErrNoCredential is returned by Validate for a Config with neither tokens
// nor HMAC secrets and without Insecure.
var ErrNoCredential = errors.New("no credential configured: give --gateway-token-file or --gateway-hmac-secret-file (or --gateway-insecure to accept unauthenticated callbacks)")

func (c *Config) withDefaults() {
	if c.SignatureHeader == "" {
		c.SignatureHeader = DefaultSignatureHeader
	}
	if c.SignatureMode == "" {
		c.SignatureMode = SignatureTimestamped
	}
	if c.TimestampHeader == "" {
		c.TimestampHeader = DefaultTimestampHeader
	}
	if c.MaxSkew == 0 {
		c.MaxSkew = DefaultMaxSkew
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
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
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdown
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
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("--shutdown-timeout must be positive, got %s", c.ShutdownTimeout)
	case c.ReadTimeout <= 0:
		return fmt.Errorf("--read-timeout must be positive, got %s", c.ReadTimeout)
	case c.SignatureMode != SignatureTimestamped && c.SignatureMode != SignatureBody:
		return fmt.Errorf("--gateway-signature-mode must be %s or %s, got %q", SignatureTimestamped, SignatureBody, c.SignatureMode)
	case c.MaxSkew <= 0:
		return fmt.Errorf("--gateway-signature-max-skew must be positive, got %s", c.MaxSkew)
	case c.SignatureHeader != "" && strings.EqualFold(c.SignatureHeader, c.TimestampHeader):
		return fmt.Errorf("--gateway-signature-header and --gateway-timestamp-header must differ, both are %q", c.SignatureHeader)
	case c.Client == nil:
		return errors.New("gateway: Config.Client is nil")
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
