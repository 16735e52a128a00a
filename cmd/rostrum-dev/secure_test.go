package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/bench"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestBenchSecureServers runs a small `rostrum-dev bench` (every mode)
// against a SASL (SCRAM-SHA-256) and mutual-TLS kfake and a TLS-only,
// ACL-protected redis-server given by flags, with the passwords from the
// environment: the benchmark connects as `rostrum run` does (internal/cli),
// and no password shows in its output.
func TestBenchSecureServers(t *testing.T) {
	const redisPW, kafkaPW = "redis-known-secret-4711", "sha256-known-secret"
	certs := testenv.NewCerts(t)
	r := testenv.StartRedis(t, testenv.WithACLUser("rostrum", redisPW), testenv.WithRedisTLS(certs, true))
	k := testenv.StartKafka(t, testenv.WithKafkaTLS(certs, true), testenv.WithSASL("SCRAM-SHA-256", "rostrum-256", kafkaPW))
	t.Setenv("ROSTRUM_REDIS_PASSWORD", redisPW)
	t.Setenv("ROSTRUM_KAFKA_PASSWORD", kafkaPW)
	var stdout, stderr testenv.LockedBuffer
	err := Main(context.Background(), []string{"bench", "--events", "2000", "--rooms", "20", "--members", "10",
		"--naive-seconds", "1", "--rate-seconds", "0", "--json",
		"--brokers", k.Seeds[0], "--kafka-sasl", "scram-sha-256", "--kafka-user", "rostrum-256",
		"--kafka-tls-ca", certs.CAFile, "--kafka-tls-cert", certs.ClientCertFile, "--kafka-tls-key", certs.ClientKeyFile,
		"--redis", r.Addr, "--redis-user", "rostrum",
		"--redis-tls-ca", certs.CAFile, "--redis-tls-cert", certs.ClientCertFile, "--redis-tls-key", certs.ClientKeyFile,
	}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Results []struct{ Mode string }
	}
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || len(rep.Results) == 0 {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	for _, pw := range []string{redisPW, kafkaPW} {
		testenv.AssertNoSecret(t, pw, map[string]string{"stderr": stderr.String(), "stdout": stdout.String()})
	}
}

// TestBenchSentinelFlagsRefused: wrong combinations of --redis and the
// Sentinel flags stop the benchmark before it starts, with rostrum run's
// errors (cmd/rostrum's TestSentinelFlagsRefused has every case), and
// without the password.
func TestBenchSentinelFlagsRefused(t *testing.T) {
	sentinel := []string{"--redis-sentinel-master", "mymaster", "--redis-sentinels", "127.0.0.1:1,127.0.0.2:2"}
	pass := testenv.WriteFile(t, "sentinel-pass", "s3cret-sentinel\n", 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"--redis", "127.0.0.1:6379"}, sentinel...), "--redis and --redis-sentinel-master/--redis-sentinels are exclusive"},
		{[]string{"--redis-sentinels", "127.0.0.1:1"}, "--redis-sentinel-master is required with --redis-sentinels"},
		{append([]string{"--redis-sentinel-password", "x", "--redis-sentinel-password-file", pass}, sentinel...),
			"--redis-sentinel-password and --redis-sentinel-password-file are exclusive"},
	} {
		err := Main(context.Background(), append([]string{"bench"}, c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("bench %q: %v; want an error containing %q, without the password", c.args, err, c.want)
		}
	}
}

// TestBenchThroughSentinel runs `rostrum-dev bench` through Sentinels that
// want an ACL user of their own, to a master that wants another: it
// reaches the master with the data nodes' credentials, and the Sentinels
// with theirs, and leaves the master empty.
func TestBenchThroughSentinel(t *testing.T) {
	s := testenv.StartRedisSentinel(t, testenv.WithSentinelAuth("watcher", "sentinel-secret"),
		testenv.WithNodeOptions(testenv.WithACLUser("rostrum", "node-secret")))
	via := []string{"--redis-sentinel-master", s.Name, "--redis-sentinels", strings.Join(s.SentinelAddrs, ","),
		"--redis-sentinel-user", "watcher", "--redis-sentinel-password-file", testenv.WriteFile(t, "sentinel-pass", "sentinel-secret\n", 0o600),
		"--redis-user", "rostrum", "--redis-password-file", testenv.WriteFile(t, "redis-pass", "node-secret\n", 0o600)}
	ctx := context.Background()
	var out, stderr bytes.Buffer
	err := cmdBench(ctx, append([]string{"--events", "2000", "--rooms", "20", "--members", "10", "--modes", "rostrum",
		"--rate-seconds", "0", "--json"}, via...), &out, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	if len(rep.Results) != 1 || rep.Results[0].Events != 2000 || rep.Results[0].Published == 0 || len(rep.Problems) > 0 {
		t.Fatalf("bench through Sentinel: %+v, problems %q", rep.Results, rep.Problems)
	}
	if n, err := s.Master().Client().DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("the master holds %d keys after bench (%v), want it left empty", n, err)
	}
}
