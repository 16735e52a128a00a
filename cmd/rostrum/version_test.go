package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: rostrum version prints the version, the commit, the build
// time and the Go version; -X main.version overrides the module's version.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"version"}, &out, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "rostrum ") || !strings.HasPrefix(lines[1], "commit:") ||
		!strings.HasPrefix(lines[2], "commit time:") || !strings.HasPrefix(lines[3], "build time:") ||
		!strings.HasPrefix(lines[4], "go:          "+runtime.Version()) {
		t.Fatalf("rostrum version:\n%s", out.String())
	}
	defer func(v string) { version = v }(version)
	version = "v9.8.7"
	if b := readBuild(); b.Version != "v9.8.7" || b.GoVersion != runtime.Version() {
		t.Errorf("readBuild with -X main.version: %+v", b)
	}
}

// TestVersionStamped builds the binary as `make release` does (static,
// -trimpath, the -X flags) but with VCS stamping off, and checks that
// `rostrum version` prints the stamped version, commit and build time: the
// commit comes from -X main.revision where the toolchain records none.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const (
		ver  = "v0.1.0-rc.1"
		rev  = "0123456789abcdef0123456789abcdef01234567"
		when = "2026-11-27T04:00:00Z"
	)
	bin := filepath.Join(t.TempDir(), "rostrum")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X main.version="+ver+" -X main.revision="+rev+" -X main.buildTime="+when,
		"-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("rostrum version: %v\n%s", err, out)
	}
	for _, want := range []string{"rostrum " + ver + "\n", "commit:      " + rev + "\n", "build time:  " + when + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rostrum version lacks %q:\n%s", want, out)
		}
	}
}
