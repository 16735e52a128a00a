package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
)

func TestSecurityConfigSources(t *testing.T) {
	pwFile := testenv.WriteFile(t, "kafka.pw", "from-file\n", 0o600)
	cfg := testenv.WriteFile(t, "rostrum.yaml", `redis-user: app
redis-password: "0x1F"
redis-tls-insecure-skip-verify: true
kafka-sasl: SCRAM-SHA-512
kafka-user: yaml-user
kafka-password-file: `+pwFile+"\n", 0o600)
	t.Setenv("ROSTRUM_KAFKA_USER", "env-user")
	f, err := parseRun(t, "--config", cfg, "--redis-user", "flag-user")
	if err != nil {
		t.Fatal(err)
	}
	s := &f.sec
	ro, err := s.RedisOptions("127.0.0.1:6379")
	if err != nil {
		t.Fatal(err)
	}
	if ro.Username != "flag-user" || ro.Password != "0x1F" || ro.TLSConfig == nil || !ro.TLSConfig.InsecureSkipVerify {
		t.Fatalf("redis: user %q, password %q, TLS %v", ro.Username, ro.Password, ro.TLSConfig)
	}
	// The Kafka password is among the secrets in use; the mechanism names
	// the user in its first message (RFC 5802: n,,n=user,r=nonce).
	var passwords []string
	for _, p := range s.Secrets() {
		passwords = append(passwords, p.Reveal())
	}
	m := s.KafkaMechanism()
	if m == nil || m.Name() != "SCRAM-SHA-512" || !slices.Contains(passwords, "from-file") {
		t.Fatalf("kafka: mechanism %v, passwords in use %d", m, len(passwords))
	}
	if _, first, err := m.Authenticate(context.Background(), "broker:9092"); err != nil || !strings.HasPrefix(string(first), "n,,n=env-user,") {
		t.Fatalf("kafka: first SCRAM message %q, %v; want user env-user", first, err)
	}
	if len(f.warnings) != 1 || !strings.Contains(f.warnings[0], "--redis-tls-insecure-skip-verify") {
		t.Errorf("warnings %q; want the one on skipped verification", f.warnings)
	}

	// An unquoted password YAML reads as a number would change its text.
	bad := testenv.WriteFile(t, "bad.yaml", "redis-password: 0x1F\n", 0o600)
	if _, err := parseRun(t, "--config", bad); err == nil || !strings.Contains(err.Error(), "redis-password must be a quoted YAML string") {
		t.Errorf("unquoted password: %v", err)
	}
}

// TestSASLOAuthExtensionsFromConfig checks that --kafka-oauth-extensions as
// a YAML list in the config file rides in the OAUTHBEARER message as the
// flag's value does (package cli tests the flag).
func TestSASLOAuthExtensionsFromConfig(t *testing.T) {
	path := testenv.WriteFile(t, "token", "opaque-token", 0o600)
	cfg := testenv.WriteFile(t, "rostrum.yaml", "kafka-sasl: oauthbearer\nkafka-oauth-token-file: "+path+
		"\nkafka-oauth-extensions: [logicalCluster=lkc-ab12, identityPoolId=pool-Ab1]\n", 0o600)
	f, err := parseRun(t, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := "n,,\x01auth=Bearer opaque-token\x01identityPoolId=pool-Ab1\x01logicalCluster=lkc-ab12\x01\x01"
	if _, msg, err := f.sec.KafkaMechanism().Authenticate(context.Background(), "broker:9092"); err != nil || string(msg) != want {
		t.Errorf("config file: %q, %v; want %q", msg, err, want)
	}
}

func TestSecurityErrorsNameTheField(t *testing.T) {
	const pw = "Pa55-known-secret"
	dir := t.TempDir()
	notPEM := testenv.WriteFile(t, "ca.pem", "not a certificate", 0o600)
	empty := testenv.WriteFile(t, "empty.pw", "\n", 0o600)
	pwFile := testenv.WriteFile(t, "pw", pw, 0o600)
	certs := testenv.NewCerts(t)
	cases := []struct {
		field string
		args  []string
	}{
		{"--redis-user", []string{"--redis-user", "app"}},
		{"--redis-password-file", []string{"--redis-password", pw, "--redis-password-file", pwFile}},
		{"--redis-password-file", []string{"--redis-password-file", filepath.Join(dir, "missing")}},
		{"--redis-password-file", []string{"--redis-password-file", empty}},
		{"--redis-tls-ca", []string{"--redis-tls-ca", filepath.Join(dir, "missing.pem")}},
		{"--redis-tls-ca", []string{"--redis-tls-ca", notPEM}},
		{"--redis-tls-key", []string{"--redis-tls-cert", certs.ClientCertFile}},
		{"--redis-tls-cert", []string{"--redis-tls-key", certs.ClientKeyFile}},
		{"--redis-tls-cert", []string{"--redis-tls-cert", certs.ClientCertFile, "--redis-tls-key", certs.ServerKeyFile}},
		{"--kafka-tls-ca", []string{"--kafka-tls-ca", notPEM}},
		{"--kafka-tls-key", []string{"--kafka-tls-cert", certs.ClientCertFile}},
		{"--kafka-user", []string{"--kafka-sasl", "plain", "--kafka-password", pw}},
		{"--kafka-password", []string{"--kafka-sasl", "scram-sha-256", "--kafka-user", "u"}},
		{"--kafka-sasl", []string{"--kafka-user", "u", "--kafka-password", pw}},
		{"--kafka-sasl", []string{"--kafka-sasl", "gssapi", "--kafka-user", "u", "--kafka-password", pw}},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		err := Main(context.Background(), append([]string{"run", "--wal-dir", t.TempDir()}, c.args...), new(bytes.Buffer), &stderr)
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: error %v does not name %s", c.args, err, c.field)
			continue
		}
		testenv.AssertNoSecret(t, pw, map[string]string{"error": err.Error(), "stderr": stderr.String()})
	}
	// The embedded servers of the demo take no credentials.
	for _, args := range [][]string{{"--kafka-sasl", "plain", "--kafka-user", "u", "--kafka-password", pw}, {"--redis-password", pw}} {
		err := Main(context.Background(), append([]string{"demo", "--kafka-port", "0"}, args...), new(bytes.Buffer), new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), "embedded") {
			t.Errorf("demo %v: %v; want a refusal naming the embedded server", args, err)
		}
	}
}

// TestConfigFileModeWarning checks the start-up warning on a config file
// that holds a secret and is readable by others, and that the log line does
// not hold the secret.
func TestConfigFileModeWarning(t *testing.T) {
	const pw = "cfg-known-secret"
	for _, c := range []struct {
		mode    os.FileMode
		content string
		warn    bool
	}{
		{0o644, `redis-password: "` + pw + `"` + "\n", true},
		{0o640, `kafka-password: "` + pw + `"` + "\nkafka-sasl: plain\nkafka-user: u\nkafka-tls: true\n", true},
		{0o600, `redis-password: "` + pw + `"` + "\n", false},
		{0o644, "top-n: 5\n", false}, // no secret in it
	} {
		cfg := testenv.WriteFile(t, "rostrum.yaml", c.content, c.mode)
		var stdout, stderr testenv.LockedBuffer
		err := Main(context.Background(), []string{"run", "--config", cfg, "--redis", "127.0.0.1:1", "--wal-dir", t.TempDir(), "--log-level", "debug"}, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "redis 127.0.0.1:1 unreachable") {
			t.Fatalf("mode %04o: %v", c.mode, err)
		}
		got := strings.Contains(stderr.String(), "is readable by group or others")
		if got != c.warn {
			t.Errorf("mode %04o, %q: warned %v, want %v; log:\n%s", c.mode, c.content, got, c.warn, stderr.String())
		}
		if c.warn && !strings.Contains(stderr.String(), `"level":"warn"`) {
			t.Errorf("warning not logged at warn level:\n%s", stderr.String())
		}
		testenv.AssertNoSecret(t, pw, map[string]string{"error": err.Error(), "stderr": stderr.String(), "stdout": stdout.String()})
	}
}

// secureServers starts a TLS-only redis-server requiring AUTH as an ACL user
// and a kfake cluster requiring TLS and SASL, both with client certificates,
// and writes the rostrum config to reach them (passwords in files).
type secureServers struct {
	certs      *testenv.Certs
	redis      *testenv.Redis
	kafka      *testenv.Kafka
	topics     processor.Topics
	redisPW    string
	kafkaPW    map[string]string // by --kafka-sasl value
	redisPWF   string
	kafkaPWF   map[string]string
	configPath string // YAML: addresses, users, TLS files (no password)
}

func startSecure(t *testing.T) *secureServers {
	t.Helper()
	s := &secureServers{
		certs:   testenv.NewCerts(t),
		topics:  processor.TopicsFor("", "test"),
		redisPW: "redis-known-secret-4711",
		kafkaPW: map[string]string{"plain": "plain-known-secret", "scram-sha-256": "sha256-known-secret", "scram-sha-512": "sha512-known-secret"},
	}
	s.redis = testenv.StartRedis(t, testenv.WithACLUser("rostrum", s.redisPW), testenv.WithRedisTLS(s.certs, true))
	s.kafka = testenv.StartKafka(t,
		testenv.WithKafkaTLS(s.certs, true),
		testenv.WithSASL("SCRAM-SHA-512", "rostrum-512", s.kafkaPW["scram-sha-512"]),
		testenv.WithSASL("SCRAM-SHA-256", "rostrum-256", s.kafkaPW["scram-sha-256"]),
		testenv.WithSASL("PLAIN", "rostrum-plain", s.kafkaPW["plain"]))
	createTopics(t, s.kafka, "test")
	s.redisPWF = testenv.WriteFile(t, "redis.pw", s.redisPW+"\n", 0o600)
	s.kafkaPWF = map[string]string{}
	for m, pw := range s.kafkaPW {
		s.kafkaPWF[m] = testenv.WriteFile(t, m+".pw", pw, 0o600)
	}
	s.configPath = testenv.WriteFile(t, "rostrum.yaml", fmt.Sprintf(`brokers: %s
redis: %s
env: test
http: ""
redis-user: rostrum
redis-tls-ca: %s
redis-tls-cert: %s
redis-tls-key: %s
kafka-tls-ca: %s
kafka-tls-cert: %s
kafka-tls-key: %s
kafka-tls-server-name: localhost
`, s.kafka.Seeds[0], s.redis.Addr, s.certs.CAFile, s.certs.ClientCertFile, s.certs.ClientKeyFile,
		s.certs.CAFile, s.certs.ClientCertFile, s.certs.ClientKeyFile), 0o600)
	return s
}

// kafkaArgs are the flags of one SASL mechanism with its user and password
// file.
func (s *secureServers) kafkaArgs(mech string) []string {
	user := map[string]string{"plain": "rostrum-plain", "scram-sha-256": "rostrum-256", "scram-sha-512": "rostrum-512"}[mech]
	return []string{"--kafka-sasl", mech, "--kafka-user", user, "--kafka-password-file", s.kafkaPWF[mech]}
}

func (s *secureServers) secrets() []string {
	out := []string{s.redisPW}
	for _, pw := range s.kafkaPW {
		out = append(out, pw)
	}
	return out
}

// TestRunSecureEndToEnd runs `rostrum run` from a SASL (SCRAM-SHA-512) and
// mutual-TLS kfake into a TLS-only, ACL-protected redis-server, and checks
// the ranking in Redis, the published top list, and that no password shows
// in the debug log.
func TestRunSecureEndToEnd(t *testing.T) {
	s := startSecure(t)
	ts := time.Now().UnixMilli()
	for i := 0; i < 5; i++ {
		v := fmt.Sprintf(`[{"room_id":"r-1","user_id":"u-%d","type":"audio","value":1,"ts":%d},{"room_id":"r-1","user_id":"u-%d","type":"volume","value":%d,"ts":%d}]`,
			i, ts+int64(i), i, i*100, ts+int64(i))
		s.kafka.Produce(s.topics.RTC, []byte("r-1"), []byte(v))
	}

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testenv.LockedBuffer
	done := make(chan error, 1)
	args := append([]string{"run", "--config", s.configPath, "--redis-password-file", s.redisPWF,
		"--wal-dir", t.TempDir(), "--log-level", "debug"}, s.kafkaArgs("scram-sha-512")...)
	go func() { done <- Main(ctx, args, &stdout, &stderr) }()

	deadline := time.Now().Add(time.Minute)
	waitRanking(t, s.redis.Client(), "r-1", []string{"u-4", "u-3", "u-2", "u-1", "u-0"}, deadline, done, &stderr)
	for len(s.kafka.ReadAll(s.topics.TopN)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no top list published; log:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run did not stop cleanly: %v", err)
	}
	if !strings.Contains(stderr.String(), `"msg":"consuming"`) {
		t.Errorf("no consuming line in the log:\n%s", stderr.String())
	}
	for _, pw := range s.secrets() {
		testenv.AssertNoSecret(t, pw, map[string]string{"stderr": stderr.String(), "stdout": stdout.String()})
	}
}

// waitRanking waits until the ranking of room in env "test" reads want,
// best first, failing the test when run (which reports on done) stops or
// the deadline passes.
func waitRanking(t *testing.T, rc redis.Cmdable, room string, want []string, deadline time.Time, done <-chan error, stderr *testenv.LockedBuffer) {
	t.Helper()
	key := sink.RoomKeys("test", room).Ranking
	for {
		got, _ := rc.ZRangeArgs(context.Background(), redis.ZRangeArgs{Key: key, Start: 0, Stop: -1, Rev: true}).Result()
		if strings.Join(got, ",") == strings.Join(want, ",") {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("run stopped: %v\nlog:\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("ranking of %s %v, want %v; log:\n%s", room, got, want, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunSecureRedisCluster runs `rostrum run`, configured by flags only,
// from a SASL and mutual-TLS kfake into a three-master Redis Cluster that
// speaks TLS only (also on its cluster bus) and requires AUTH as an ACL
// user. The rooms' rankings land on every master, so the client reached
// each node over TLS, checking each node's certificate, and authenticated
// there; no password may show in the output or the debug log.
func TestRunSecureRedisCluster(t *testing.T) {
	const (
		redisPW = "cluster-known-secret-2718"
		kafkaPW = "kafka-known-secret-3141"
	)
	certs := testenv.NewCerts(t)
	topics := processor.TopicsFor("", "test")
	cluster := testenv.StartRedisCluster(t, testenv.WithACLUser("rostrum", redisPW), testenv.WithRedisTLS(certs, true))
	kafka := testenv.StartKafka(t,
		testenv.WithKafkaTLS(certs, true), testenv.WithSASL("SCRAM-SHA-256", "rostrum-256", kafkaPW))
	createTopics(t, kafka, "test")
	redisPWF := testenv.WriteFile(t, "redis.pw", redisPW+"\n", 0o600)
	kafkaPWF := testenv.WriteFile(t, "kafka.pw", kafkaPW, 0o600)

	// Room ids whose hash tags fall in the slots of all three masters (as
	// checked below): CRC16 and redis-cli's even split make that fixed.
	rooms := []string{"r-1", "r-2", "r-3", "r-4", "r-5", "r-6", "r-7", "r-8"}
	ts := time.Now().UnixMilli()
	for _, room := range rooms {
		for i := range 3 {
			v := fmt.Sprintf(`{"room_id":%q,"user_id":"u-%d","type":"volume","value":%d,"ts":%d}`, room, i, (i+1)*100, ts+int64(i))
			kafka.Produce(topics.RTC, []byte(room), []byte(v))
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testenv.LockedBuffer
	done := make(chan error, 1)
	args := []string{"run", "--env", "test", "--http", "", "--wal-dir", t.TempDir(), "--log-level", "debug",
		"--brokers", kafka.Seeds[0], "--kafka-sasl", "scram-sha-256", "--kafka-user", "rostrum-256", "--kafka-password-file", kafkaPWF,
		"--kafka-tls-ca", certs.CAFile, "--kafka-tls-cert", certs.ClientCertFile, "--kafka-tls-key", certs.ClientKeyFile,
		"--kafka-tls-server-name", "localhost",
		"--redis", strings.Join(cluster.Addrs, ","), "--redis-tls", "--redis-tls-ca", certs.CAFile,
		"--redis-tls-cert", certs.ClientCertFile, "--redis-tls-key", certs.ClientKeyFile,
		"--redis-user", "rostrum", "--redis-password-file", redisPWF,
	}
	go func() { done <- Main(ctx, args, &stdout, &stderr) }()

	rc := cluster.Client()
	deadline := time.Now().Add(time.Minute)
	for _, room := range rooms {
		waitRanking(t, rc, room, []string{"u-2", "u-1", "u-0"}, deadline, done, &stderr)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run did not stop cleanly: %v", err)
	}

	masters := map[string]bool{}
	for _, room := range rooms {
		key := sink.RoomKeys("test", room).Ranking
		m, err := rc.MasterForKey(context.Background(), key)
		if err != nil {
			t.Fatalf("master of %s: %v", key, err)
		}
		// The node's own connection follows no redirect: the key is there.
		if n, err := m.Exists(context.Background(), key).Result(); err != nil || n != 1 {
			t.Fatalf("EXISTS %s on %s = %d, %v; want 1", key, m.Options().Addr, n, err)
		}
		masters[m.Options().Addr] = true
	}
	if len(masters) != len(cluster.Addrs) {
		t.Errorf("the rankings are on masters %v; want all of %v", masters, cluster.Addrs)
	}
	for _, pw := range []string{redisPW, kafkaPW} {
		testenv.AssertNoSecret(t, pw, map[string]string{"stderr": stderr.String(), "stdout": stdout.String()})
	}
}

// TestRedisClusterEachNodeVerifiedAgainstItsHost connects the Redis client
// of `rostrum run` (its flags, cli.Security.RedisOptions, the client run
// builds) to a TLS and ACL cluster whose masters sit on 127.0.0.1, 127.0.0.2 and
// 127.0.0.3, each with a certificate naming its own address only. Writing
// to every master succeeds only if each node is checked against its own
// host; with --redis-tls-server-name fixed to the first node's, the others
// must be refused.
func TestRedisClusterEachNodeVerifiedAgainstItsHost(t *testing.T) {
	const redisPW = "hosts-known-secret-1618"
	certs := testenv.NewCerts(t)
	cluster := testenv.StartRedisCluster(t, testenv.WithACLUser("rostrum", redisPW),
		testenv.WithRedisTLS(certs, true), testenv.WithDistinctHosts())
	args := []string{"--redis", strings.Join(cluster.Addrs, ","), "--redis-tls-ca", certs.CAFile,
		"--redis-tls-cert", certs.ClientCertFile, "--redis-tls-key", certs.ClientKeyFile,
		"--redis-user", "rostrum", "--redis-password", redisPW}
	client := func(t *testing.T, extra ...string) redis.UniversalClient {
		t.Helper()
		f, err := parseRun(t, append(args, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		o, err := f.sec.RedisOptions(f.redis)
		if err != nil {
			t.Fatal(err)
		}
		o.MaxRetries = -1 // a refused certificate is final: fail at once
		rc := redis.NewUniversalClient(o)
		t.Cleanup(func() { _ = rc.Close() })
		if _, ok := rc.(*redis.ClusterClient); !ok {
			t.Fatalf("client of %s is a %T; want a cluster client", f.redis, rc)
		}
		return rc
	}
	ctx := context.Background()
	const keys = 60 // their slots fall on all three masters (checked below)

	t.Run("own host", func(t *testing.T) {
		rc := client(t)
		for i := range keys {
			if err := rc.Set(ctx, fmt.Sprintf("host-key-%d", i), i, 0).Err(); err != nil {
				t.Fatalf("SET host-key-%d: %v", i, err)
			}
		}
		for i := range len(cluster.Addrs) {
			n, err := cluster.Node(i).Client().DBSize(ctx).Result()
			if err != nil || n == 0 {
				t.Errorf("node %d (%s): DBSIZE = %d, %v; want some of the keys on every master", i, cluster.Addrs[i], n, err)
			}
		}
	})

	t.Run("fixed server name", func(t *testing.T) {
		first, _, _ := strings.Cut(cluster.Addrs[0], ":")
		rc := client(t, "--redis-tls-server-name", first)
		// The keys on the first master may go through; the first key on
		// another must be refused, which is all this needs to see.
		for i := range keys {
			err := rc.Set(ctx, fmt.Sprintf("host-key-%d", i), i, 0).Err()
			var hostErr x509.HostnameError
			switch {
			case errors.As(err, &hostErr):
				return
			case err != nil:
				t.Fatalf("SET host-key-%d: %v; want success or a certificate host name error", i, err)
			}
		}
		t.Errorf("every SET succeeded with --redis-tls-server-name %s; want the other masters refused", first)
	})
}

// TestRunEachSASLMechanism starts the processor from the CLI configuration
// with each SASL mechanism against the same TLS kfake; it must get to
// consuming with each.
func TestRunEachSASLMechanism(t *testing.T) {
	s := startSecure(t)
	for _, mech := range []string{"plain", "scram-sha-256", "scram-sha-512"} {
		t.Run(mech, func(t *testing.T) {
			f, err := parseRun(t, append([]string{"--config", s.configPath, "--redis-password-file", s.redisPWF,
				"--wal-dir", t.TempDir(), "--group", "g-" + mech}, s.kafkaArgs(mech)...)...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := false
			err = runProcessor(ctx, f, zap.NewNop(), func(*processor.Processor) { started = true; cancel() })
			if err != nil || !started {
				t.Fatalf("started %v, err %v", started, err)
			}
		})
	}
}

// TestRunWrongPasswordFailsClearly gives `rostrum run` a wrong Redis, then a
// wrong Kafka password: it must stop at start-up naming what failed and the
// flags to check, with the password in neither the error nor the log.
func TestRunWrongPasswordFailsClearly(t *testing.T) {
	s := startSecure(t)
	const wrong = "wrong-known-secret-0815"
	wrongFile := testenv.WriteFile(t, "wrong.pw", wrong, 0o600)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"redis", append([]string{"--redis-password", wrong}, s.kafkaArgs("scram-sha-256")...),
			[]string{"redis " + s.redis.Addr, `authentication as user "rostrum" failed`, "--redis-password"}},
		{"redis without user", append([]string{"--redis-user", "", "--redis-password", wrong}, s.kafkaArgs("scram-sha-256")...),
			[]string{"redis " + s.redis.Addr, "authentication as the default user failed"}},
		{"kafka", []string{"--redis-password-file", s.redisPWF, "--kafka-sasl", "scram-sha-256", "--kafka-user", "rostrum-256", "--kafka-password-file", wrongFile},
			[]string{"kafka: SASL scram-sha-256 authentication as user \"rostrum-256\" failed", "--kafka-password"}},
		{"kafka plain", []string{"--redis-password-file", s.redisPWF, "--kafka-sasl", "plain", "--kafka-user", "rostrum-plain", "--kafka-password", wrong},
			[]string{"kafka: SASL plain authentication", "--kafka-password"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr testenv.LockedBuffer
			err := Main(context.Background(), append([]string{"run", "--config", s.configPath, "--wal-dir", t.TempDir(), "--log-level", "debug"}, c.args...), &stdout, &stderr)
			if err == nil {
				t.Fatal("run started with a wrong password")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, pw := range append(s.secrets(), wrong) {
				testenv.AssertNoSecret(t, pw, map[string]string{"error": err.Error(), "stderr": stderr.String(), "stdout": stdout.String()})
			}
		})
	}
}

// TestWALReplaySecureRedis replays an empty WAL into the TLS, ACL-protected
// Redis: `wal replay` connects as `run` does.
func TestWALReplaySecureRedis(t *testing.T) {
	s := startSecure(t)
	var stdout bytes.Buffer
	t.Setenv("ROSTRUM_REDIS_PASSWORD", s.redisPW)
	err := Main(context.Background(), []string{"wal", "replay", "--config", s.configPath, "--wal-dir", t.TempDir(), "--log-level", "error"}, &stdout, new(bytes.Buffer))
	if err != nil || !strings.Contains(stdout.String(), "replayed 0 batches") {
		t.Fatalf("replay: %v, %s", err, stdout.String())
	}
}
