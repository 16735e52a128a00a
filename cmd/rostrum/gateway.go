package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/gateway"
)

// gatewayFlags are the settings of `rostrum gateway`. Each is also
// ROSTRUM_<NAME> and a key of --config.
type gatewayFlags struct {
	brokers, http, topicPrefix string
	createTopics               bool
	routes                     routeFlags
	tokenFile, hmacSecretFile  string
	signatureHeader            string
	insecure                   bool
	tlsCert, tlsKey            string
	maxBodyBytes               int64
	maxInflight                int
	produceTimeout             time.Duration
	logFormat, logLevel        string
	config                     string
	sec                        securityFlags

	warnings []string
}

func (f *gatewayFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.brokers, "brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	fs.StringVar(&f.http, "http", "127.0.0.1:8081", "listen address: POST /v1/callbacks/{rtc|client|signal}, /healthz, /readyz, /metrics")
	fs.StringVar(&f.topicPrefix, "topic-prefix", "", "prefix of every topic name")
	fs.BoolVar(&f.createTopics, "create-topics", false, "create missing callback topics at start instead of failing")
	f.routes.register(fs)
	fs.StringVar(&f.tokenFile, "gateway-token-file", "", "file of bearer tokens, one per line (several while rotating); re-read on SIGHUP")
	fs.StringVar(&f.hmacSecretFile, "gateway-hmac-secret-file", "", "file of HMAC-SHA256 secrets, one per line, that a body signature may be made with; re-read on SIGHUP")
	fs.StringVar(&f.signatureHeader, "gateway-signature-header", gateway.DefaultSignatureHeader, "header carrying the hex HMAC-SHA256 of the body (an optional sha256= prefix is accepted)")
	fs.BoolVar(&f.insecure, "gateway-insecure", false, "start without any credential: every request is accepted (testing only)")
	fs.StringVar(&f.tlsCert, "gateway-tls-cert", "", "PEM certificate of the listener (with --gateway-tls-key): serve HTTPS; re-read on SIGHUP")
	fs.StringVar(&f.tlsKey, "gateway-tls-key", "", "PEM private key of --gateway-tls-cert")
	fs.Int64Var(&f.maxBodyBytes, "max-body-bytes", gateway.DefaultMaxBodyBytes, "largest request body accepted (413 above)")
	fs.IntVar(&f.maxInflight, "max-inflight", gateway.DefaultMaxInflight, "callback requests pending at once at most (503 with Retry-After above)")
	fs.DurationVar(&f.produceTimeout, "produce-timeout", gateway.DefaultProduceTimeout, "how long a request waits for the brokers' acknowledgements before a 503")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or console")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.config, "config", "", "YAML config file; keys are these flag names, and routes: a list of {env, pattern}")
	f.sec.registerKafka(fs)
}

func (f *gatewayFlags) parse(fs *flag.FlagSet, args []string) error {
	cfg, warnings, err := parseSources(fs, args, &f.config)
	if err != nil {
		return err
	}
	if err := f.routes.read(cfg); err != nil {
		return err
	}
	if err := f.sec.resolve(); err != nil {
		return err
	}
	f.warnings = append(warnings, f.sec.warnings...)
	return nil
}

func (f *gatewayFlags) logger(stderr io.Writer) (*zap.Logger, error) {
	rf := runFlags{logFormat: f.logFormat, logLevel: f.logLevel, warnings: f.warnings}
	return rf.logger(stderr)
}

func cmdGateway(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
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
	return scrubError(runGateway(ctx, &f, lg, nil, nil), f.sec.secrets()...)
}

// runGateway connects to Kafka, checks the callback topics, and serves
// until ctx ends. ln, if not nil, is listened on instead of --http; started,
// if not nil, is called with the listen address once serving.
func runGateway(ctx context.Context, f *gatewayFlags, lg *zap.Logger, ln net.Listener, started func(addr string)) error {
	kopts, err := f.sec.kafkaOpts()
	if err != nil {
		return err
	}
	return serveGateway(ctx, f, kopts, lg, ln, started)
}

// serveGateway is runGateway with the Kafka security options given (the
// demo passes its own).
func serveGateway(ctx context.Context, f *gatewayFlags, kopts []kgo.Opt, lg *zap.Logger, ln net.Listener, started func(addr string)) error {
	routes, err := f.routes.table()
	if err != nil {
		return err
	}
	cfg := gateway.Config{
		Routes:          routes,
		TopicPrefix:     f.topicPrefix,
		SignatureHeader: f.signatureHeader,
		Insecure:        f.insecure,
		MaxBodyBytes:    f.maxBodyBytes,
		MaxInflight:     f.maxInflight,
		ProduceTimeout:  f.produceTimeout,
		Logger:          lg,
	}
	if f.tokenFile != "" {
		if cfg.Tokens, err = auth.LoadTokens(f.tokenFile); err != nil {
			return fmt.Errorf("--gateway-token-file: %w", err)
		}
	}
	if f.hmacSecretFile != "" {
		if cfg.Secrets, err = auth.LoadSecrets(f.hmacSecretFile); err != nil {
			return fmt.Errorf("--gateway-hmac-secret-file: %w", err)
		}
	}
	if f.maxBodyBytes < 2 || f.maxInflight < 1 || f.produceTimeout <= 0 {
		return cfg.Validate() // names the flag
	}
	var cert atomic.Pointer[tls.Certificate]
	var tlsConfig *tls.Config
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return errors.New("--gateway-tls-cert and --gateway-tls-key go together: give both or neither")
	case f.tlsCert != "":
		c, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return fmt.Errorf("--gateway-tls-cert %s / --gateway-tls-key %s: %w", f.tlsCert, f.tlsKey, err)
		}
		cert.Store(&c)
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert.Load(), nil }}
	}

	opts := append([]kgo.Opt{kgo.SeedBrokers(splitList(f.brokers)...)}, kopts...)
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
		return f.sec.kafkaError(fmt.Errorf("kafka %s: %w", f.brokers, err))
	}

	// SIGHUP re-reads the token and secret files and the certificate; a
	// file that fails to load leaves what is in force in force.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			reload(lg, "--gateway-token-file", cfg.Tokens != nil, func() error { _, err := cfg.Tokens.Reload(); return err })
			reload(lg, "--gateway-hmac-secret-file", cfg.Secrets != nil, func() error { _, err := cfg.Secrets.Reload(); return err })
			reload(lg, "--gateway-tls-cert", tlsConfig != nil, func() error {
				c, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
				if err == nil {
					cert.Store(&c)
				}
				return err
			})
		}
	}()

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

func reload(lg *zap.Logger, what string, configured bool, fn func() error) {
	if !configured {
		return
	}
	if err := fn(); err != nil {
		lg.Warn("reload failed; the previous one stays in force", zap.String("file", what), zap.Error(err))
		return
	}
	lg.Info("reloaded", zap.String("file", what))
}
