package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// The markers around the generated part of docs/configuration.md.
const (
	beginGenerated = "<!-- BEGIN GENERATED: make docs -->\n"
	endGenerated   = "<!-- END GENERATED -->\n"
)

// TestConfigReferenceCurrent fails when docs/configuration.md lists other
// flags, variables, keys or defaults than the binary registers.
func TestConfigReferenceCurrent(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, beginGenerated), strings.Index(doc, endGenerated)
	if i < 0 || j < i {
		t.Fatalf("docs/configuration.md: no %q … %q markers", strings.TrimSpace(beginGenerated), strings.TrimSpace(endGenerated))
	}
	got := doc[i+len(beginGenerated) : j]
	if want := configMarkdown(); got != want {
		t.Errorf("docs/configuration.md differs from the flags; regenerate it: make docs (or go run ./cmd/rostrum help config --markdown)\n%s", firstDiff(got, want))
	}
}

// firstDiff names the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := 0; k < len(g) || k < len(w); k++ {
		var gl, wl string
		if k < len(g) {
			gl = g[k]
		}
		if k < len(w) {
			wl = w[k]
		}
		if gl != wl {
			return fmt.Sprintf("line %d of the generated part:\n  file:   %s\n  binary: %s", k+1, gl, wl)
		}
	}
	return ""
}

// TestHelpConfig checks the command line of the reference: `rostrum help`
// still prints the usage, and `help config --markdown` prints the reference.
func TestHelpConfig(t *testing.T) {
	var out strings.Builder
	if err := Main(context.Background(), []string{"help"}, &out, io.Discard); err != nil || out.String() != usage {
		t.Fatalf("rostrum help: %v, %q", err, out.String())
	}
	out.Reset()
	if err := Main(context.Background(), []string{"help", "config", "--markdown"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if out.String() != configMarkdown() {
		t.Error("rostrum help config --markdown prints another text than configMarkdown")
	}
	for _, args := range [][]string{{"help", "config"}, {"help", "nope"}, {"help", "config", "--markdown", "x"}} {
		if err := Main(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("rostrum %v: no error", args)
		}
	}
}
