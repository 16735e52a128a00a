package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoDevTools holds the production binary lean: no package
// of the benchmarks (bench, bench/flicker), nothing of gonum (their
// charts) and nothing of the test support (internal/testkit) may be in its
// dependency graph. The developer tools live in
// cmd/rostrum-dev.
func TestBinaryLinksNoDevTools(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on the PATH")
	}
	out, err := exec.Command(gotool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const bench, testkit = "github.com/rostrumhq/rostrum/bench", "github.com/rostrumhq/rostrum/internal/testkit"
	var bad []string
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "gonum.org/") || pkg == bench || strings.HasPrefix(pkg, bench+"/") || strings.HasPrefix(pkg, testkit+"/") {
			bad = append(bad, pkg)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("cmd/rostrum links developer tools or test support (move what needs them to cmd/rostrum-dev or a test): %s", strings.Join(bad, " "))
	}
	if !strings.Contains(string(out), "github.com/rostrumhq/rostrum/processor") {
		t.Fatalf("go list -deps does not list the processor; the check above saw nothing:\n%s", out)
	}
}

// TestDevCommandsPointToRostrumDev: the commands that moved to rostrum-dev
// are not in the help, and running one says where it went.
func TestDevCommandsPointToRostrumDev(t *testing.T) {
	var help bytes.Buffer
	if err := Main(context.Background(), []string{"help"}, &help, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"rostrum bench", "rostrum simulate", "--flicker"} {
		if strings.Contains(help.String(), cmd) {
			t.Errorf("rostrum help lists %q:\n%s", cmd, help.String())
		}
	}
	for _, args := range [][]string{{"bench", "--events", "1000"}, {"bench", "--flicker"}, {"flicker"}, {"simulate", "-h"}} {
		err := Main(context.Background(), args, new(bytes.Buffer), new(bytes.Buffer))
		want := "rostrum-dev " + strings.Join(args, " ")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rostrum %s: %v; want an error pointing to %s", strings.Join(args, " "), err, want)
		}
	}
}
