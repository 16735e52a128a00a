package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary double as the gateway benchmark's child,
// which RunGateway starts by re-executing its own binary (this one, under
// go test) with GatewayChildEnv set.
func TestMain(m *testing.M) {
	c, child, err := LookupGatewayChild()
	if child {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		if err == nil && len(c.KafkaArgs) > 0 {
			err = errors.New("the test binary's gateway child takes no Kafka flags")
		}
		if err == nil {
			err = GatewayChildMain(ctx, c, nil, os.Stdin, os.Stdout)
		}
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "gateway child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRunGatewayChild runs a short gateway benchmark twice: with the
// gateway in a child process, where each gateway mode reports the child's
// own allocations, bytes and CPU per request and the child writes its
// profiles where it is told, and with it in process, where it reports
// none. The child's allocations per request are fewer than the whole
// process's of the in-process run (the child holds neither the HTTP
// clients nor the broker), so the attribution is real.
func TestRunGatewayChild(t *testing.T) {
	ctx := context.Background()
	profiles := t.TempDir()
	rep, err := RunGateway(ctx, GatewayConfig{Requests: 2000, Connections: 8, Rate: 1000, RateFor: 500 * time.Millisecond,
		ChildProfileDir: profiles})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cpu.pprof", "allocs.pprof"} {
		if fi, err := os.Stat(filepath.Join(profiles, name)); err != nil || fi.Size() == 0 {
			t.Errorf("the child's %s: %v; want a profile", name, err)
		}
	}
	if rep.InProcess || len(rep.Results) != 4 {
		t.Fatalf("in process %v, %d results; want a child and 4 results", rep.InProcess, len(rep.Results))
	}
	for _, r := range rep.Results {
		gw := strings.HasPrefix(r.Mode, "gateway")
		own := r.GatewayAllocsPerReq > 0 && r.GatewayBytesPerReq > 0 && r.GatewayCPUPerReqUS > 0
		if r.Errors != 0 || gw != own || r.GatewayAllocsPerReq < 0 || r.GatewayBytesPerReq < 0 || r.GatewayCPUPerReqUS < 0 {
			t.Errorf("%s: %d errors, gateway's own figures %.1f allocs, %.0f B, %.1f µs per request; want them > 0 for the gateway's modes only",
				r.Mode, r.Errors, r.GatewayAllocsPerReq, r.GatewayBytesPerReq, r.GatewayCPUPerReqUS)
		}
	}

	in, err := RunGateway(ctx, GatewayConfig{Requests: 2000, Connections: 8, RateFor: -1, InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	if !in.InProcess || len(in.Results) != 3 {
		t.Fatalf("in process %v, %d results; want in process and 3 results", in.InProcess, len(in.Results))
	}
	whole, flat := in.Results[2], rep.Results[2]
	if whole.GatewayAllocsPerReq != 0 {
		t.Errorf("in process: the gateway's own allocations reported (%.1f per request); want none", whole.GatewayAllocsPerReq)
	}
	if flat.GatewayAllocsPerReq >= whole.AllocsPerReq {
		t.Errorf("the gateway child allocates %.1f per request, the whole process with the gateway in it %.1f; want fewer",
			flat.GatewayAllocsPerReq, whole.AllocsPerReq)
	}
}

// TestRunGatewayChildFails: a child that cannot start makes RunGateway
// fail with an error that says so and holds the child's stderr.
func TestRunGatewayChildFails(t *testing.T) {
	_, err := RunGateway(context.Background(), GatewayConfig{Requests: 10, Connections: 1, RateFor: -1,
		ChildEnv: []string{GatewayChildEnv + "={not json"}})
	if err == nil || !strings.Contains(err.Error(), "did not start") || !strings.Contains(err.Error(), "gateway child: bench: gateway child: "+GatewayChildEnv) {
		t.Fatalf("RunGateway with a broken child: %v; want an error that says the child did not start, with its stderr", err)
	}
}
