package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/rostrumhq/rostrum/bench"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestMain lets the test binary double as the gateway benchmark's child,
// as main does: bench.RunGateway re-executes its own binary.
func TestMain(m *testing.M) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	child, err := gatewayChild(ctx)
	stop()
	if child {
		if err != nil {
			fmt.Fprintln(os.Stderr, "rostrum-dev:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchGatewaySecure runs a small `rostrum-dev bench --workload
// gateway` against a SASL (SCRAM-SHA-256) and mutual-TLS kfake: the
// gateway child connects with the Kafka flags of its parent, the password
// given by flag reaches it through its environment, the gateway's own
// figures are reported, and no password shows in the output.
func TestBenchGatewaySecure(t *testing.T) {
	const kafkaPW = "gateway-known-secret-0815"
	certs := testenv.NewCerts(t)
	k := testenv.StartKafka(t, testenv.WithKafkaTLS(certs, true), testenv.WithSASL("SCRAM-SHA-256", "rostrum-256", kafkaPW))
	var stdout, stderr testenv.LockedBuffer
	err := Main(context.Background(), []string{"bench", "--workload", "gateway", "--requests", "300", "--connections", "4",
		"--rate-seconds", "0", "--json",
		"--brokers", k.Seeds[0], "--kafka-sasl", "scram-sha-256", "--kafka-user", "rostrum-256", "--kafka-password", kafkaPW,
		"--kafka-tls-ca", certs.CAFile, "--kafka-tls-cert", certs.ClientCertFile, "--kafka-tls-key", certs.ClientKeyFile,
	}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, stderr.String())
	}
	var rep bench.GatewayReport
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || len(rep.Results) != 3 {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	if gw := rep.Results[2]; gw.Errors != 0 || gw.GatewayAllocsPerReq <= 0 || gw.GatewayCPUPerReqUS <= 0 {
		t.Fatalf("gateway flat out: %+v; want no errors and the gateway's own figures", gw)
	}
	testenv.AssertNoSecret(t, kafkaPW, map[string]string{"stderr": stderr.String(), "stdout": stdout.String()})
}
