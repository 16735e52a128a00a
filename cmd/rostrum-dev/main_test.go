package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelp: the help lists the developer tools and points to rostrum for
// the rest; an unknown command, or none, is an error with the usage.
func TestHelp(t *testing.T) {
	var stdout bytes.Buffer
	if err := Main(context.Background(), []string{"help"}, &stdout, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rostrum-dev bench ", "--workload gateway", "rostrum-dev bench --flicker", "rostrum-dev flicker",
		"rostrum-dev simulate", "rostrum help"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, args := range [][]string{nil, {"run"}, {"demo"}} {
		var stderr bytes.Buffer
		err := Main(context.Background(), args, new(bytes.Buffer), &stderr)
		if err == nil || !strings.Contains(stderr.String(), "Usage:") {
			t.Errorf("rostrum-dev %q: %v, usage printed: %v", args, err, strings.Contains(stderr.String(), "Usage:"))
		}
	}
}

// TestFlickerCommand: `rostrum-dev flicker` is `rostrum-dev bench
// --flicker`, old flag names included.
func TestFlickerCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := Main(context.Background(), []string{"flicker", "--duration", "1m", "--scenarios", "lecture", "--dwell", "2s"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("flicker: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "lecture  hysteresis") || !strings.Contains(stderr.String(), "--dwell is deprecated: write --stability-dwell") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}
