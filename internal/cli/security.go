package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Security are the credentials and TLS settings of the connections to
// Redis and Kafka. Every command that connects takes them from here, so
// `rostrum run`, `demo`, `wal replay` and `rostrum-dev simulate` and `bench`
// connect alike: Redis through RedisOptions, Kafka through KafkaOpts.
//
// Passwords are secrets (printed as "[redacted]"). They may come from a
// flag, ROSTRUM_REDIS_PASSWORD / ROSTRUM_KAFKA_PASSWORD, the config file, or
// a file of their own (--redis-password-file, --kafka-password-file), which
// keeps them out of the process's arguments and environment.
//
// Register the flags (Register, or RegisterRedis / RegisterKafka), parse,
// then Resolve once; the methods that build clients resolve first. Not safe
// for concurrent use before Resolve has returned.
type Security struct {
	// Sentinel are the --redis-sentinel-* settings (sentinel.go).
	Sentinel Sentinel
	// Warnings are the start-up warnings Resolve collects (a password sent
	// in clear text, a readable password file); the command logs them.
	Warnings []string
	// RedisSet and KafkaSet report, after Resolve, whether some Redis or
	// Kafka security setting was given: the demo's embedded servers and the
	// benchmark's private ones refuse them.
	RedisSet, KafkaSet bool

	redisUser         string // ACL user; default none (the default user)
	redisPassword     Secret
	redisPasswordFile string
	redisTLS          tlsFlags

	kafkaSASL            string // plain, scram-sha-256, scram-sha-512, oauthbearer, aws-msk-iam; default none
	kafkaUser            string
	kafkaPassword        Secret
	kafkaPasswordFile    string
	kafkaOAuthTokenFile  string // oauthbearer (sasl.go)
	kafkaOAuthExtensions string // oauthbearer: key=value,...
	kafkaTLS             tlsFlags

	// Set by Resolve.
	resolved       bool
	redisPass      Secret // from --redis-password or its file
	kafkaPass      Secret // from --kafka-password or its file
	redisTLSConfig *tls.Config
	kafkaTLSConfig *tls.Config
	kafkaMechanism sasl.Mechanism
	kafkaAWSSource string // aws-msk-iam: where the chain found credentials

	// saslRefused is set when a broker closed the connection while
	// answering SASLAuthenticate, which is how some brokers (kfake among
	// them) refuse credentials instead of returning an error code.
	saslRefused atomic.Bool
}

// saslHook notes a failed read of a SASLAuthenticate response.
type saslHook struct{ refused *atomic.Bool }

func (h saslHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == kmsg.SASLAuthenticate.Int16() && err != nil {
		h.refused.Store(true)
	}
}

// tlsFlags are the TLS settings of one kind of connection. TLS is on when
// --X-tls is set or any other --X-tls-* setting is given.
type tlsFlags struct {
	name                  string // "redis" or "kafka": the flags' prefix
	on                    bool
	ca, cert, key, server string
	insecure              bool
}

func (t *tlsFlags) register(fs *FlagSet, what, whose string) {
	p := "--" + t.name + "-tls"
	g := fs.Group(t.name) // the group is named as the prefix: kafka or redis
	g.BoolVar(&t.on, t.name+"-tls", false, "connect to "+what+" over TLS (implied by any "+p+"-* setting)")
	g.Tuning().StringVar(&t.ca, t.name+"-tls-ca", "", "PEM file of the CA certificates that sign "+whose+" certificate (default: the system's)")
	g.Tuning().StringVar(&t.cert, t.name+"-tls-cert", "", "PEM file of the client certificate presented to "+what+" (with "+p+"-key)")
	g.Tuning().StringVar(&t.key, t.name+"-tls-key", "", "PEM file of the client certificate's private key (with "+p+"-cert)")
	g.Tuning().StringVar(&t.server, t.name+"-tls-server-name", "", "name expected in "+whose+" certificate (default: the host of the address dialled)")
	g.Tuning().BoolVar(&t.insecure, t.name+"-tls-insecure-skip-verify", false, "do not verify "+whose+" certificate (testing only: anyone on the path can read the traffic)")
}

func (t *tlsFlags) enabled() bool {
	return t.on || t.ca != "" || t.cert != "" || t.key != "" || t.server != "" || t.insecure
}

// config loads the files and returns the client TLS configuration, or nil
// when TLS is off. Errors name the flag.
func (t *tlsFlags) config() (*tls.Config, error) {
	if !t.enabled() {
		return nil, nil
	}
	p := "--" + t.name + "-tls"
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.server, InsecureSkipVerify: t.insecure}
	if t.ca != "" {
		b, err := os.ReadFile(t.ca)
		if err != nil {
			return nil, fmt.Errorf("%s-ca: %w", p, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s-ca %s: no PEM certificate in it", p, t.ca)
		}
		cfg.RootCAs = pool
	}
	switch {
	case t.cert != "" && t.key == "":
		return nil, fmt.Errorf("%s-key is required with %s-cert", p, p)
	case t.key != "" && t.cert == "":
		return nil, fmt.Errorf("%s-cert is required with %s-key", p, p)
	case t.cert != "":
		c, err := tls.LoadX509KeyPair(t.cert, t.key)
		if err != nil {
			return nil, fmt.Errorf("%s-cert %s / %s-key %s: %w", p, t.cert, p, t.key, err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}

// Register registers the Redis and the Kafka flags into fs.
func (s *Security) Register(fs *FlagSet) {
	s.RegisterRedis(fs)
	s.RegisterKafka(fs)
}

// RegisterRedis registers the Redis flags (--redis-user, --redis-password*,
// --redis-tls*, --redis-sentinel*) into fs, for a command without Kafka.
func (s *Security) RegisterRedis(fs *FlagSet) {
	fs.Group("redis").Tuning().StringVar(&s.redisUser, "redis-user", "", "Redis ACL user to AUTH as (needs a password)")
	fs.Group("redis").Tuning().Var(&s.redisPassword, "redis-password", "Redis password (of --redis-user, or of the default user); prefer --redis-password-file or ROSTRUM_REDIS_PASSWORD")
	fs.Group("redis").StringVar(&s.redisPasswordFile, "redis-password-file", "", "file holding the Redis password (one line)")
	s.redisTLS.name = "redis"
	s.redisTLS.register(fs, "Redis", "Redis's")
	s.Sentinel.register(fs)
}

// RegisterKafka registers the Kafka flags (--kafka-sasl, --kafka-user,
// --kafka-password*, --kafka-oauth-*, --kafka-tls*) into fs, for a command
// without Redis.
func (s *Security) RegisterKafka(fs *FlagSet) {
	fs.Group("kafka").StringVar(&s.kafkaSASL, "kafka-sasl", "", "Kafka SASL mechanism: plain, scram-sha-256, scram-sha-512, oauthbearer (--kafka-oauth-token-file) or aws-msk-iam (the AWS credential chain; implies --kafka-tls) (default: none)")
	fs.Group("kafka").StringVar(&s.kafkaUser, "kafka-user", "", "Kafka SASL user")
	fs.Group("kafka").Tuning().Var(&s.kafkaPassword, "kafka-password", "Kafka SASL password; prefer --kafka-password-file or ROSTRUM_KAFKA_PASSWORD")
	fs.Group("kafka").StringVar(&s.kafkaPasswordFile, "kafka-password-file", "", "file holding the Kafka SASL password (one line)")
	s.registerKafkaManaged(fs)
	s.kafkaTLS.name = "kafka"
	s.kafkaTLS.register(fs, "the Kafka brokers", "the brokers'")
}

// Resolve validates the settings, reads the password and certificate files
// and collects the start-up warnings. It runs once; later calls return nil.
// Errors name the flag and never hold a password.
func (s *Security) Resolve() error {
	if s.resolved {
		return nil
	}
	var err error
	if s.redisPass, err = s.password("redis", s.redisPassword, s.redisPasswordFile); err != nil {
		return err
	}
	if s.redisUser != "" && !s.redisPass.IsSet() {
		return fmt.Errorf("--redis-user %q needs --redis-password or --redis-password-file", s.redisUser)
	}
	if s.redisTLS.name != "" { // registered
		if s.redisTLSConfig, err = s.redisTLS.config(); err != nil {
			return err
		}
		if err := s.Sentinel.resolve(s); err != nil {
			return err
		}
	}
	if s.kafkaPass, err = s.password("kafka", s.kafkaPassword, s.kafkaPasswordFile); err != nil {
		return err
	}
	if s.kafkaTLS.name != "" {
		if s.kafkaTLSConfig, err = s.kafkaTLS.config(); err != nil {
			return err
		}
	}
	mech := strings.ToLower(s.kafkaSASL)
	managed, err := s.resolveManagedSASL(mech) // oauthbearer, aws-msk-iam: sasl.go
	if err != nil {
		return err
	}
	switch {
	case managed:
	case mech == "" && (s.kafkaUser != "" || s.kafkaPass.IsSet()):
		return errors.New("--kafka-sasl is required with --kafka-user or a Kafka password: plain, scram-sha-256 or scram-sha-512")
	case mech == "":
	case s.kafkaUser == "":
		return fmt.Errorf("--kafka-user is required with --kafka-sasl %s", mech)
	case !s.kafkaPass.IsSet():
		return fmt.Errorf("--kafka-password or --kafka-password-file is required with --kafka-sasl %s", mech)
	}
	user, pass := s.kafkaUser, s.kafkaPass.Reveal()
	switch mech {
	case "", saslOAuthBearer, saslAWSMSKIAM:
	case "plain":
		s.kafkaMechanism = plain.Auth{User: user, Pass: pass}.AsMechanism()
		if s.kafkaTLSConfig == nil {
			s.Warnings = append(s.Warnings, "--kafka-sasl plain without --kafka-tls sends the Kafka password in clear text")
		}
	case "scram-sha-256":
		s.kafkaMechanism = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case "scram-sha-512":
		s.kafkaMechanism = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	default:
		return fmt.Errorf("--kafka-sasl must be plain, scram-sha-256, scram-sha-512, oauthbearer or aws-msk-iam, got %q", s.kafkaSASL)
	}
	for _, t := range []*tlsFlags{&s.redisTLS, &s.kafkaTLS} {
		if t.insecure {
			s.Warnings = append(s.Warnings, fmt.Sprintf("--%s-tls-insecure-skip-verify: the server's certificate is not checked", t.name))
		}
	}
	s.RedisSet = s.redisUser != "" || s.redisPass.IsSet() || s.redisTLSConfig != nil
	s.KafkaSet = s.kafkaMechanism != nil || s.kafkaTLSConfig != nil
	s.resolved = true
	return nil
}

// password returns the password of --NAME-password or --NAME-password-file
// (its content without the trailing line break).
func (s *Security) password(name string, v Secret, file string) (Secret, error) {
	if file == "" {
		return v, nil
	}
	if v.IsSet() {
		return Secret{}, fmt.Errorf("--%s-password and --%s-password-file are exclusive: give one", name, name)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return Secret{}, fmt.Errorf("--%s-password-file: %w", name, err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return Secret{}, fmt.Errorf("--%s-password-file: %w", name, err)
	}
	p := strings.TrimRight(string(b), "\r\n")
	if p == "" {
		return Secret{}, fmt.Errorf("--%s-password-file %s is empty", name, file)
	}
	if fi.Mode().Perm()&0o044 != 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("--%s-password-file %s is readable by group or others (mode %04o); chmod 600 it", name, file, fi.Mode().Perm()))
	}
	return Secret{p}, nil
}

// Secrets lists the passwords in use, for ScrubError.
func (s *Security) Secrets() []Secret {
	return []Secret{s.redisPass, s.kafkaPass, s.Sentinel.pass}
}

// redisDialTimeout is go-redis's own default, kept for the TLS dialer.
const redisDialTimeout = 5 * time.Second

// RedisOptions returns the options of a client of addr (comma-separated:
// several addresses mean a Redis Cluster, as go-redis's UniversalClient
// decides), or with --redis-sentinel-master of the master the Sentinels
// name (addr unused), with the configured ACL user, password and TLS. It
// is the one place every command builds its Redis client from.
func (s *Security) RedisOptions(addr string) (*redis.UniversalOptions, error) {
	if err := s.Resolve(); err != nil {
		return nil, err
	}
	o := &redis.UniversalOptions{Addrs: SplitList(addr), Username: s.redisUser, Password: s.redisPass.Reveal()}
	if s.Sentinel.On() {
		s.Sentinel.apply(o)
	}
	if s.redisTLSConfig != nil {
		// The dialer fills an empty ServerName per address dialled, as kgo
		// does, so each node of a cluster is checked against its own host,
		// never one fixed name that would fit only one node's certificate
		// (TestRedisClusterEachNodeVerifiedAgainstItsHost holds it to that).
		o.TLSConfig = s.redisTLSConfig
		o.Dialer = tlsDialer(s.redisTLSConfig, redisDialTimeout)
	}
	return o, nil
}

// RedisSingle returns the options of a client of the single node addr, for
// the commands that need one node (rostrum-dev bench).
func (s *Security) RedisSingle(addr string) (*redis.Options, error) {
	u, err := s.RedisOptions(addr)
	if err != nil {
		return nil, err
	}
	return &redis.Options{Addr: addr, Username: u.Username, Password: u.Password, TLSConfig: u.TLSConfig, Dialer: u.Dialer}, nil
}

func tlsDialer(cfg *tls.Config, timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c := cfg.Clone()
		if c.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				c.ServerName = host
			}
		}
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}, Config: c}
		return d.DialContext(ctx, network, addr)
	}
}

// KafkaMechanism is the SASL mechanism the Kafka clients authenticate with,
// after Resolve; nil without --kafka-sasl.
func (s *Security) KafkaMechanism() sasl.Mechanism { return s.kafkaMechanism }

// KafkaOpts returns the kgo options that carry the configured TLS and SASL,
// appended to every Kafka client the commands create.
func (s *Security) KafkaOpts() ([]kgo.Opt, error) {
	if err := s.Resolve(); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if s.kafkaTLSConfig != nil {
		// kgo clones the config per dial and fills ServerName from the
		// broker's host when it is empty.
		opts = append(opts, kgo.DialTLSConfig(s.kafkaTLSConfig))
	}
	if s.kafkaMechanism != nil {
		opts = append(opts, kgo.SASL(s.kafkaMechanism), kgo.WithHooks(saslHook{&s.saslRefused}))
	}
	return opts, nil
}

// RedisError turns a failed first contact with Redis into a start-up error
// that says what failed and which flags to check, without the password.
func (s *Security) RedisError(addr string, err error) error {
	msg := err.Error()
	addr = s.Sentinel.Target(addr)
	switch {
	case s.Sentinel.On() && strings.Contains(msg, "sentinels"):
		// go-redis: "all sentinels specified in configuration are
		// unreachable: <each Sentinel's error>".
		err = fmt.Errorf("redis %s: no Sentinel answered (check --redis-sentinels, --redis-sentinel-user and --redis-sentinel-password): %w", addr, err)
	case strings.Contains(msg, "WRONGPASS"):
		who := "the default user"
		if s.redisUser != "" {
			who = fmt.Sprintf("user %q", s.redisUser)
		}
		err = fmt.Errorf("redis %s: authentication as %s failed (check --redis-user and --redis-password): %w", addr, who, err)
	case strings.Contains(msg, "NOAUTH"):
		err = fmt.Errorf("redis %s requires authentication: set --redis-user and --redis-password: %w", addr, err)
	default:
		err = fmt.Errorf("redis %s unreachable: %w", addr, err)
	}
	return ScrubError(err, s.Secrets()...)
}

// KafkaError adds to a failed first contact with Kafka which flags to check
// when the brokers refused the credentials, and removes any password.
func (s *Security) KafkaError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState) || s.saslRefused.Load() {
		who, check := s.saslIdentity()
		err = fmt.Errorf("kafka: SASL %s authentication %s failed (check %s): %w", strings.ToLower(s.kafkaSASL), who, check, err)
	}
	return ScrubError(err, s.Secrets()...)
}

// ConfigWarnings returns a warning when the config file at path holds a
// secret and can be read by users other than its owner.
func ConfigWarnings(fs *flag.FlagSet, path string, file map[string]any) []string {
	var keys []string
	for k := range file {
		if f := fs.Lookup(k); f != nil {
			if _, ok := f.Value.(*Secret); ok {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o044 == 0 {
		return nil
	}
	return []string{fmt.Sprintf("--config %s holds %s and is readable by group or others (mode %04o); chmod 600 it",
		path, strings.Join(keys, ", "), fi.Mode().Perm())}
}

// ApplySecurityEnv fills the unset security flags of fs (--redis-* and
// --kafka-* but --redis itself) from ROSTRUM_<FLAG>, for the commands that
// take no config file (dlq, and rostrum-dev's simulate and bench). Their
// other flags keep ignoring the environment, so a shell's ROSTRUM_ENV=prod
// meant for `run` does not send simulated load to prod.
func ApplySecurityEnv(fs *FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] || !(strings.HasPrefix(f.Name, "kafka-") || strings.HasPrefix(f.Name, "redis-")) {
			return
		}
		env := "ROSTRUM_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %v", env, e)
			}
		}
	})
	return err
}

// KafkaDescription says how the Kafka client authenticates, without secrets.
func (s *Security) KafkaDescription() string {
	d := "no SASL"
	if s.kafkaSASL != "" {
		who, _ := s.saslIdentity()
		d = fmt.Sprintf("SASL %s %s", s.kafkaSASL, who)
	}
	if s.kafkaTLS.enabled() {
		return d + ", TLS"
	}
	return d + ", no TLS"
}

// RedisDescription says how the Redis client authenticates, without secrets.
func (s *Security) RedisDescription() string {
	d := "default user"
	switch {
	case s.redisUser != "":
		d = fmt.Sprintf("user %q", s.redisUser)
	case s.redisPass.IsSet():
		d = "default user with a password"
	}
	if s.Sentinel.On() {
		d += ", " + s.Sentinel.description()
	}
	if s.redisTLS.enabled() {
		return d + ", TLS"
	}
	return d + ", no TLS"
}
