package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/cli"
)

// parseRunSources parses args with run's flags as cmdRun does, up to the sources.
func parseRunSources(t *testing.T, args ...string) (*runFlags, []string, error) {
	t.Helper()
	fs := cli.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f runFlags
	f.register(fs)
	_, warnings, err := parseSources(fs.FlagSet, args, &f.config, nil)
	return &f, warnings, err
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rostrum.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFlagAliases pins that each old name still sets its flag, as a flag,
// a variable and a config key, with a warning naming the new one, and that
// both names with different values are an error naming both.
func TestFlagAliases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		config  string
		args    []string
		want    time.Duration // --stability-dwell after parsing
		warn    string        // a warning contains it; "" none
		wantErr string        // the error contains it
	}{
		{name: "flag", args: []string{"--dwell", "3s"}, want: 3 * time.Second, warn: "--dwell is deprecated: write --stability-dwell"},
		{name: "new flag", args: []string{"--stability-dwell", "3s"}, want: 3 * time.Second},
		{name: "both flags agree", args: []string{"--dwell", "90s", "--stability-dwell", "1m30s"}, want: 90 * time.Second, warn: "--dwell"},
		{name: "both flags differ", args: []string{"--dwell", "1s", "--stability-dwell", "2s"}, wantErr: "--dwell and --stability-dwell"},
		{name: "env", env: map[string]string{"ROSTRUM_DWELL": "4s"}, want: 4 * time.Second, warn: "ROSTRUM_DWELL is deprecated: write ROSTRUM_STABILITY_DWELL"},
		{name: "both env differ", env: map[string]string{"ROSTRUM_DWELL": "4s", "ROSTRUM_STABILITY_DWELL": "5s"}, wantErr: "ROSTRUM_DWELL and ROSTRUM_STABILITY_DWELL"},
		{name: "flag beats old env", env: map[string]string{"ROSTRUM_DWELL": "4s"}, args: []string{"--stability-dwell", "6s"}, want: 6 * time.Second},
		{name: "yaml", config: "dwell: 7s\n", want: 7 * time.Second, warn: "config key dwell is deprecated: write config key stability-dwell"},
		{name: "both yaml differ", config: "dwell: 7s\nstability-dwell: 8s\n", wantErr: "dwell and stability-dwell"},
		{name: "old env beats new yaml", env: map[string]string{"ROSTRUM_DWELL": "4s"}, config: "stability-dwell: 8s\n", want: 4 * time.Second, warn: "ROSTRUM_DWELL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := tc.args
			if tc.config != "" {
				args = append([]string{"--config", writeConfig(t, tc.config)}, args...)
			}
			f, warnings, err := parseRunSources(t, args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.dwell != tc.want {
				t.Errorf("--stability-dwell %s, want %s", f.dwell, tc.want)
			}
			joined := strings.Join(warnings, "\n")
			if tc.warn == "" && strings.Contains(joined, "deprecated") || !strings.Contains(joined, tc.warn) {
				t.Errorf("warnings %q, want one containing %q", warnings, tc.warn)
			}
		})
	}
}

// TestFlagAliasesEveryOldName sets each old name and checks its new flag.
func TestFlagAliasesEveryOldName(t *testing.T) {
	values := map[string]string{"control-max-body": "4096", "dwell": "3s", "grace": "4s", "margin": "9", "due-interval": "250ms"}
	for old, name := range cli.DeprecatedFlags() {
		fs := cli.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f runFlags
		f.register(fs)
		if _, _, err := parseSources(fs.FlagSet, []string{"--" + old, values[old]}, &f.config, nil); err != nil {
			t.Fatalf("--%s: %v", old, err)
		}
		if got := fs.Lookup(name).Value.String(); got != values[old] {
			t.Errorf("--%s %s: --%s is %s", old, values[old], name, got)
		}
	}
}
