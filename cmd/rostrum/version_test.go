package main

import (
	"bytes"
	"context"
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
