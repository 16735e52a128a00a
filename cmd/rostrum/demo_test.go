package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testenv"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDemo runs `rostrum demo` as `make run` does (on a free port) until its
// console view shows published stable lists, then stops it as Ctrl-C would.
func TestDemo(t *testing.T) {
	testenv.RedisBinary(t) // the demo runs a private redis-server
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"demo", "--kafka-port", "0", "--http", "127.0.0.1:0", "--rooms", "3", "--members", "12"}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(stdout.String(), "seq ") {
		select {
		case err := <-done:
			t.Fatalf("demo stopped early: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stable list shown within 2m\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}
	if !strings.Contains(stdout.String(), "Kafka broker  127.0.0.1:") {
		t.Fatalf("broker address not printed:\n%s", stdout.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("demo did not stop cleanly: %v\nstderr:\n%s", err, stderr.String())
	}
}
