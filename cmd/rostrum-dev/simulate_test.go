package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestSimulateToKafka: `rostrum-dev simulate` produces the meetings to the
// env's callback topics until it is stopped.
func TestSimulateToKafka(t *testing.T) {
	k := testenv.StartKafka(t)
	k.CreateTopics(1, "sim.callbacks.rtc", "sim.callbacks.client", "sim.callbacks.signal")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"simulate", "--brokers", strings.Join(k.Seeds, ","), "--env", "sim", "--rooms", "2", "--members", "10"},
			io.Discard, io.Discard)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for len(k.ReadAll("sim.callbacks.rtc"))+len(k.ReadAll("sim.callbacks.signal")) < 20 {
		if time.Now().After(deadline) {
			t.Fatal("no simulated meeting in the sim topics")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestSimulateToGateway: with --gateway the callbacks are POSTed there, with
// the first token of --gateway-token-file and the rooms of --room-prefix.
func TestSimulateToGateway(t *testing.T) {
	var mu sync.Mutex
	var auths, bodies []string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		auths, bodies = append(auths, r.Header.Get("Authorization")), append(bodies, string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(gw.Close)
	tokens := testenv.WriteFile(t, "tokens", "# sim\nsim-0123456789abcd\nnext-0123456789abcd\n", 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"simulate", "--gateway", gw.URL, "--gateway-token-file", tokens, "--room-prefix", "gray-",
			"--rooms", "1", "--members", "10"}, io.Discard, io.Discard)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(bodies)
		mu.Unlock()
		if n >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the gateway received no simulated meeting")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range bodies {
		if auths[i] != "Bearer sim-0123456789abcd" || !strings.Contains(bodies[i], `"room_id":"gray-r-0"`) {
			t.Fatalf("request %d: Authorization %q, body %s", i, auths[i], bodies[i])
		}
	}
}

// TestSimulateFlags: simulate reads no config file, and a token file
// without a token is refused.
func TestSimulateFlags(t *testing.T) {
	cfg := testenv.WriteFile(t, "rostrum.yaml", "env: prod\n", 0o600)
	if err := Main(context.Background(), []string{"simulate", "--config", cfg}, io.Discard, io.Discard); err == nil {
		t.Error("simulate accepted a config file")
	}
	empty := testenv.WriteFile(t, "tokens", "# none yet\n", 0o600)
	err := Main(context.Background(), []string{"simulate", "--gateway", "http://127.0.0.1:1", "--gateway-token-file", empty}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "holds no token") {
		t.Errorf("empty token file: %v", err)
	}
}
