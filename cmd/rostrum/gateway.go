package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/gateway"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/route"
)

// gatewayFlags are the settings of `rostrum gateway`. Each is also
// ROSTRUM_<NAME> and a key of --config.
type gatewayFlags struct {
	brokers, http, topicPrefix string
	createTopics               bool
	routes                     routeFlags
	tokenFile, hmacSecretFile  string
	signatureMode              string
	signatureHeader            string
	timestampHeader            string
	maxSkew                    time.Duration
	insecure                   bool
	tls                        listenTLSFlags // --gateway-tls-cert, --gateway-tls-key
	maxBodyBytes               int64
	maxInflight                int
	produceTimeout             time.Duration
	readTimeout                time.Duration
	shutdownTimeout            time.Duration
	logFlags
	config string
	sec    cli.Security
}

func (f *gatewayFlags) register(fs *cli.FlagSet) {
	registerBrokers(fs, &f.brokers)
	fs.Group("http").StringVar(&f.http, "http", "127.0.0.1:8081", "listen address: POST /v1/callbacks/{rtc|client|signal}, /healthz, /readyz, /metrics")
	registerTopicPrefix(fs, &f.topicPrefix)
	registerCreateTopics(fs, &f.createTopics)
	f.routes.register(fs)
	fs.Group("http").StringVar(&f.tokenFile, "gateway-token-file", "", "file of bearer tokens, one per line (several while rotating), each at least 16 bytes; re-read on SIGHUP")
	fs.Group("http").StringVar(&f.hmacSecretFile, "gateway-hmac-secret-file", "", "file of HMAC-SHA256 signing secrets, one per line (several while rotating), each at least 16 bytes; re-read on SIGHUP")
	fs.Group("http").Tuning().StringVar(&f.signatureMode, "gateway-signature-mode", gateway.SignatureTimestamped, "what a signature covers: timestamped (recommended: HMAC of timestamp.method.path.body, the Unix time in --gateway-timestamp-header) or body (the body alone: cannot stop a replay or a body sent to another route)")
	fs.Group("http").Tuning().StringVar(&f.signatureHeader, "gateway-signature-header", gateway.DefaultSignatureHeader, "header carrying the hex HMAC-SHA256 signature (an optional sha256= prefix is accepted)")
	fs.Group("http").Tuning().StringVar(&f.timestampHeader, "gateway-timestamp-header", gateway.DefaultTimestampHeader, "header carrying the Unix time in seconds of a timestamped signature")
	fs.Group("http").Tuning().DurationVar(&f.maxSkew, "gateway-signature-max-skew", gateway.DefaultMaxSkew, "how far a timestamped signature's time may be from the gateway's clock, either way")
	fs.Group("http").Tuning().BoolVar(&f.insecure, "gateway-insecure", false, "start without any credential: every request is accepted (testing only)")
	f.tls.register(fs, "gateway", "the listener")
	fs.Group("limits").Tuning().Int64Var(&f.maxBodyBytes, "max-body-bytes", gateway.DefaultMaxBodyBytes, "largest request body accepted (413 above)")
	fs.Group("limits").Tuning().IntVar(&f.maxInflight, "max-inflight", gateway.DefaultMaxInflight, "callback requests pending at once at most, their credentials checked (503 with Retry-After above); as many signed requests again may be reading their body to have the signature checked")
	fs.Group("kafka").Tuning().DurationVar(&f.produceTimeout, "produce-timeout", gateway.DefaultProduceTimeout, "how long a request waits for the brokers' acknowledgements before a 503")
	fs.Group("http").Tuning().DurationVar(&f.readTimeout, "read-timeout", gateway.DefaultReadTimeout, "how long a request may take to arrive, headers and body (408 after it)")
	fs.Group("ops").Tuning().Sets("ShutdownTimeout").DurationVar(&f.shutdownTimeout, "shutdown-timeout", gateway.DefaultShutdown, "on SIGTERM, stop accepting and let requests in flight finish within this time; the rest are cut")
	f.logFlags.register(fs)
	fs.Group("ops").StringVar(&f.config, "config", "", "YAML config file; keys are these flag names, and routes: a list of {env, pattern}")
	f.sec.RegisterKafka(fs)
}

func (f *gatewayFlags) parse(fs *cli.FlagSet, args []string) error {
	cfg, warnings, err := parseSources(fs.FlagSet, args, &f.config, nil)
	if err != nil {
		return err
	}
	if err := f.routes.read(cfg); err != nil {
		return err
	}
	if err := f.sec.Resolve(); err != nil {
		return err
	}
	f.warnings = append(warnings, f.sec.Warnings...)
	return nil
}

func cmdGateway(ctx context.Context, args []string, stderr io.Writer) error {
	fs := cli.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f gatewayFlags
	f.register(fs)
	if err := f.parse(fs, args); err != nil {
		return err
	}
	lg, err := f.logger(stderr)
	if err != nil {
		return err
	}
	defer func() { _ = lg.Sync() }()
	return cli.ScrubError(runGateway(ctx, &f, lg, nil, nil), f.sec.Secrets()...)
}

// runGateway connects to Kafka, checks the callback topics, and serves
// until ctx ends. ln, if not nil, is listened on instead of --http; started,
// if not nil, is called with the listen address once serving.
func runGateway(ctx context.Context, f *gatewayFlags, lg *zap.Logger, ln net.Listener, started func(addr string)) error {
	kopts, err := f.sec.KafkaOpts()
	if err != nil {
		return err
	}
	return serveGateway(ctx, f, kopts, lg, ln, started)
}

// gatewayConfig is the gateway's configuration of f, with the credentials that
// SIGHUP reloads and the TLS configuration of --gateway-tls-cert (nil
// without TLS). The producer client is the caller's to set.
func (f *gatewayFlags) gatewayConfig(routes *route.Table, lg *zap.Logger) (gateway.Config, *credentials, *tls.Config, error) {
	cfg := gateway.Config{
		Routes:          routes,
		TopicPrefix:     f.topicPrefix,
		SignatureMode:   f.signatureMode,
		SignatureHeader: f.signatureHeader,
		TimestampHeader: f.timestampHeader,
		MaxSkew:         f.maxSkew,
		Insecure:        f.insecure,
		MaxBodyBytes:    f.maxBodyBytes,
		MaxInflight:     f.maxInflight,
		ProduceTimeout:  f.produceTimeout,
		ShutdownTimeout: f.shutdownTimeout,
		ReadTimeout:     f.readTimeout,
		Logger:          lg,
	}
	creds := new(credentials)
	var err error
	if f.tokenFile != "" {
		if cfg.Tokens, err = loadTokens("--gateway-token-file", f.tokenFile); err != nil {
			return cfg, nil, nil, err
		}
		creds.tokens("--gateway-token-file", cfg.Tokens)
	}
	if f.hmacSecretFile != "" {
		if cfg.Secrets, err = loadSecrets("--gateway-hmac-secret-file", f.hmacSecretFile); err != nil {
			return cfg, nil, nil, err
		}
		creds.secrets("--gateway-hmac-secret-file", cfg.Secrets)
	}
	if f.maxBodyBytes < 2 || f.maxInflight < 1 || f.produceTimeout <= 0 || f.readTimeout <= 0 || f.maxSkew <= 0 ||
		(f.signatureMode != gateway.SignatureTimestamped && f.signatureMode != gateway.SignatureBody) {
		return cfg, nil, nil, cfg.Validate() // names the flag
	}
	cert, err := f.tls.load()
	if err != nil {
		return cfg, nil, nil, err
	}
	creds.cert("--gateway-tls-cert", cert)
	var tlsConfig *tls.Config
	if cert != nil {
		tlsConfig = cert.TLSConfig()
	}
	return cfg, creds, tlsConfig, nil
}

// serveGateway is runGateway with the Kafka security options given (the
// demo passes its own).
func serveGateway(ctx context.Context, f *gatewayFlags, kopts []kgo.Opt, lg *zap.Logger, ln net.Listener, started func(addr string)) error {
	routes, err := f.routes.table()
	if err != nil {
		return err
	}
	cfg, creds, tlsConfig, err := f.gatewayConfig(routes, lg)
	if err != nil {
		return err
	}

	tr, err := osTracing(ctx, "rostrum-gateway", lg) // OTEL_* (docs/tracing.md)
	if err != nil {
		return err
	}
	defer tr.stop(lg)
	cfg.TracerProvider = tr.provider()
	opts := append(append([]kgo.Opt{kgo.SeedBrokers(cli.SplitList(f.brokers)...)}, kopts...), tr.kafkaOpts()...)
	cl, err := kgo.NewClient(append(opts, gateway.ProducerOpts(f.produceTimeout, f.maxBodyBytes)...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	cfg.Client = cl
	gw, err := gateway.New(cfg) // refuses a start without a credential
	if err != nil {
		return err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = cl.Ping(pingCtx)
	if err == nil {
		err = gateway.EnsureTopics(pingCtx, cl, gateway.Topics(f.topicPrefix, routes), f.createTopics, 0)
	}
	cancel()
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return f.sec.KafkaError(fmt.Errorf("kafka %s: %w", f.brokers, err))
	}

	// SIGHUP re-reads the token and secret files and the certificate; a
	// file that fails to load leaves what is in force in force.
	defer creds.watch(ctx, lg)()

	if ln == nil {
		if ln, err = net.Listen("tcp", f.http); err != nil {
			return fmt.Errorf("--http %s: %w", f.http, err)
		}
	}
	lg.Info("gateway serving", zap.String("http", ln.Addr().String()), zap.Bool("tls", tlsConfig != nil),
		zap.String("routes", routes.String()), zap.Strings("topics", gateway.Topics(f.topicPrefix, routes)),
		zap.Bool("bearer", cfg.Tokens != nil), zap.Bool("hmac", cfg.Secrets != nil))
	if started != nil {
		started(ln.Addr().String())
	}
	err = gw.Serve(ctx, ln, tlsConfig)
	lg.Info("gateway stopped")
	return err
}
