package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/demo"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

func parseGateway(t *testing.T, args ...string) (*gatewayFlags, error) {
	t.Helper()
	fs := cli.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	var f gatewayFlags
	f.register(fs)
	return &f, f.parse(fs, args)
}

func TestGatewayCommandRefusesToStartWithoutCredential(t *testing.T) {
	err := Main(context.Background(), []string{"gateway", "--route-default", "test", "--brokers", "127.0.0.1:1"}, new(bytes.Buffer), new(bytes.Buffer))
	for _, flagName := range []string{"--gateway-token-file", "--gateway-hmac-secret-file", "--gateway-insecure"} {
		if err == nil || !strings.Contains(err.Error(), flagName) {
			t.Fatalf("start without a credential: %v, want an error naming %s", err, flagName)
		}
	}
}

func TestGatewayCommandNamesAMissingTopic(t *testing.T) {
	k := testenv.StartKafka(t, testenv.WithTopics(1, "prod.callbacks.rtc", "prod.callbacks.client", "prod.callbacks.signal"))
	err := Main(context.Background(), []string{"gateway", "--brokers", strings.Join(k.Seeds, ","), "--gateway-insecure",
		"--route", "prod=^p-,gray=^g-", "--log-level", "error"}, new(bytes.Buffer), new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "topic gray.callbacks.rtc does not exist") || !strings.Contains(err.Error(), "--create-topics") {
		t.Fatalf("missing topic: %v", err)
	}
}

func TestGatewayCommandRoutesFromConfigAndRotatesOnSIGHUP(t *testing.T) {
	k := testenv.StartKafka(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("first-0123456789ab\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "gateway.yaml")
	yaml := "brokers: " + strings.Join(k.Seeds, ",") + "\ncreate-topics: true\ngateway-token-file: " + tokens +
		"\nroutes:\n  - {env: prod, pattern: '^p-'}\n  - {env: gray, pattern: '^g-'}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ROSTRUM_ROUTE_DEFAULT", "test")
	f, err := parseGateway(t, "--config", cfg, "--http", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	core, logs := observer.New(zap.InfoLevel)
	lg := zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	go func() { done <- runGateway(ctx, f, lg, nil, func(a string) { addr <- a }) }()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a + "/v1/callbacks/signal"
	case err := <-done:
		t.Fatal(err)
	}
	post := func(token, room string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"room_id":"`+room+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for room, topic := range map[string]string{"p-1": "prod.callbacks.signal", "g-1": "gray.callbacks.signal", "x-1": "test.callbacks.signal"} {
		if code := post("first-0123456789ab", room); code != http.StatusAccepted {
			t.Fatalf("%s: %d", room, code)
		}
		if recs := k.ReadAll(topic); len(recs) != 1 || string(recs[0].Key) != room {
			t.Errorf("%s: %d records in %s", room, len(recs), topic)
		}
	}

	if err := os.WriteFile(tokens, []byte("second-0123456789ab\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for post("second-0123456789ab", "p-2") != http.StatusAccepted {
		if time.Now().After(deadline) {
			t.Fatal("the rotated token was not accepted after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := post("first-0123456789ab", "p-3"); code != http.StatusUnauthorized {
		t.Errorf("the retired token: %d, want 401", code)
	}
	// An empty file (all tokens revoked) is refused: the set in force
	// stays, with a warning.
	if err := os.WriteFile(tokens, []byte("# none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); logs.FilterMessageSnippet("stays in force").Len() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no warning after SIGHUP with an empty token file")
		}
	}
	if code := post("second-0123456789ab", "p-4"); code != http.StatusAccepted {
		t.Errorf("after a failed reload the token in force: %d, want 202", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunRoutes(t *testing.T) {
	f, err := parseRun(t, "--route", "prod=^p-,gray=^g-", "--route-default", "test", "--env", "gray")
	if err != nil {
		t.Fatal(err)
	}
	rooms, err := runRooms(&f.routes, f.env)
	if err != nil || !rooms.Belongs("gray", "g-1") || rooms.Belongs("gray", "p-1") || rooms.Belongs("gray", "x") {
		t.Fatalf("routes: %v %v", rooms, err)
	}
	f, _ = parseRun(t, "--route", "gray=^g-", "--env", "prod")
	if _, err := runRooms(&f.routes, f.env); err == nil || !strings.Contains(err.Error(), "--env prod") {
		t.Errorf("routes without the served env: %v", err)
	}
	f, _ = parseRun(t, "--env", "prod")
	if rooms, err := runRooms(&f.routes, f.env); err != nil || rooms != nil {
		t.Errorf("no routes: %v %v, want every room", rooms, err)
	}
}

// TestGatewayRoutesTheSimulatedMeeting POSTs the demo's simulated meeting
// (what rostrum-dev simulate --gateway sends) to the gateway with a bearer
// token: the gray rooms' callbacks land in the gray topics.
func TestGatewayRoutesTheSimulatedMeeting(t *testing.T) {
	k := testenv.StartKafka(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# sim\nsim-0123456789abcd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := parseGateway(t, "--brokers", strings.Join(k.Seeds, ","), "--create-topics", "--gateway-token-file", tokens,
		"--route", "gray=^gray-", "--log-level", "error")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	go func() { _ = runGateway(ctx, f, zaptest.NewLogger(t), nil, func(a string) { addr <- a }) }()
	url := "http://" + <-addr
	simCtx, stopSim := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- demo.Feed(simCtx, demo.FeedConfig{Gateway: url, Token: "sim-0123456789abcd", RoomPrefix: "gray-", Rooms: 2, MaxMembers: 10})
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(k.ReadAll("gray.callbacks.rtc"))+len(k.ReadAll("gray.callbacks.client"))+len(k.ReadAll("gray.callbacks.signal")) < 20 {
		if time.Now().After(deadline) {
			t.Fatal("the simulated meeting did not reach the gray topics through the gateway")
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopSim()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, rec := range k.ReadAll("gray.callbacks.rtc") {
		if !strings.HasPrefix(string(rec.Key), "gray-") {
			t.Fatalf("record of room %q in gray", rec.Key)
		}
	}
}

// TestGatewayCommandSignatureModesAndTLS: the signature flags reach the
// gateway (timestamped by default, body with --gateway-signature-mode
// body), and --gateway-tls-cert serves HTTPS.
func TestGatewayCommandSignatureModesAndTLS(t *testing.T) {
	k := testenv.StartKafka(t)
	certs := testenv.NewCerts(t)
	const secret = "vendor-secret-0123456789"
	secrets := filepath.Join(t.TempDir(), "secrets")
	if err := os.WriteFile(secrets, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	body := []byte(`{"room_id":"p-1"}`)
	for _, c := range []struct {
		mode             string
		timestamped, raw int // answers to a timestamped and a body-only signature
	}{
		{"", http.StatusAccepted, http.StatusUnauthorized},
		{"body", http.StatusUnauthorized, http.StatusAccepted},
	} {
		args := []string{"--brokers", strings.Join(k.Seeds, ","), "--create-topics", "--route-default", "test", "--http", "127.0.0.1:0",
			"--gateway-hmac-secret-file", secrets, "--gateway-tls-cert", certs.ServerCertFile, "--gateway-tls-key", certs.ServerKeyFile, "--log-level", "error"}
		if c.mode != "" {
			args = append(args, "--gateway-signature-mode", c.mode)
		}
		f, err := parseGateway(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		addr := make(chan string, 1)
		done := make(chan error, 1)
		go func() { done <- runGateway(ctx, f, zaptest.NewLogger(t), nil, func(a string) { addr <- a }) }()
		var url string
		select {
		case a := <-addr:
			url = "https://" + a + "/v1/callbacks/rtc"
		case err := <-done:
			t.Fatal(err)
		}
		post := func(hdr ...string) int {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			for i := 0; i+1 < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		now := time.Now().Unix()
		if code := post("X-Rostrum-Signature", auth.SignRequest([]byte(secret), now, "POST", "/v1/callbacks/rtc", body),
			"X-Rostrum-Timestamp", strconv.FormatInt(now, 10)); code != c.timestamped {
			t.Errorf("mode %q, a timestamped signature: %d, want %d", c.mode, code, c.timestamped)
		}
		if code := post("X-Rostrum-Signature", auth.SignHMAC([]byte(secret), body)); code != c.raw {
			t.Errorf("mode %q, a body signature: %d, want %d", c.mode, code, c.raw)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
