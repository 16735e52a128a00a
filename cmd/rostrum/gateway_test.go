package main

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/internal/testenv"
)

func parseGateway(t *testing.T, args ...string) (*gatewayFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
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
	if err := os.WriteFile(tokens, []byte("first\n"), 0o600); err != nil {
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
	go func() { done <- runGateway(ctx, f, zaptest.NewLogger(t), nil, func(a string) { addr <- a }) }()
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
		if code := post("first", room); code != http.StatusAccepted {
			t.Fatalf("%s: %d", room, code)
		}
		if recs := k.ReadAll(topic); len(recs) != 1 || string(recs[0].Key) != room {
			t.Errorf("%s: %d records in %s", room, len(recs), topic)
		}
	}

	if err := os.WriteFile(tokens, []byte("second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for post("second", "p-2") != http.StatusAccepted {
		if time.Now().After(deadline) {
			t.Fatal("the rotated token was not accepted after SIGHUP")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := post("first", "p-3"); code != http.StatusUnauthorized {
		t.Errorf("the retired token: %d, want 401", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunRoutesAndDeprecatedRoomPattern(t *testing.T) {
	f, err := parseRun(t, "--route", "prod=^p-,gray=^g-", "--route-default", "test", "--env", "gray")
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	rooms, err := runRooms(&f.routes, f.env, f.roomPattern, func(w string) { warned = append(warned, w) })
	if err != nil || !rooms.Belongs("gray", "g-1") || rooms.Belongs("gray", "p-1") || rooms.Belongs("gray", "x") || len(warned) != 0 {
		t.Fatalf("routes: %v %v %v", rooms, err, warned)
	}
	f, _ = parseRun(t, "--room-pattern", "^p-", "--env", "prod")
	rooms, err = runRooms(&f.routes, f.env, f.roomPattern, func(w string) { warned = append(warned, w) })
	if err != nil || !rooms.Belongs("prod", "p-1") || rooms.Belongs("prod", "x") || len(warned) != 1 || !strings.Contains(warned[0], "deprecated") {
		t.Fatalf("room-pattern: %v %v %v", rooms, err, warned)
	}
	f, _ = parseRun(t, "--room-pattern", "^p-", "--route", "prod=^p-")
	if _, err := runRooms(&f.routes, f.env, f.roomPattern, func(string) {}); err == nil {
		t.Error("--room-pattern with --route accepted")
	}
	f, _ = parseRun(t, "--route", "gray=^g-", "--env", "prod")
	if _, err := runRooms(&f.routes, f.env, f.roomPattern, func(string) {}); err == nil || !strings.Contains(err.Error(), "--env prod") {
		t.Errorf("routes without the served env: %v", err)
	}
}

func TestSimulatePostsToTheGateway(t *testing.T) {
	k := testenv.StartKafka(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# sim\ns1\n"), 0o600); err != nil {
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
		done <- Main(simCtx, []string{"simulate", "--gateway", url, "--gateway-token-file", tokens, "--room-prefix", "gray-", "--rooms", "2", "--members", "10"},
			new(bytes.Buffer), new(bytes.Buffer))
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
