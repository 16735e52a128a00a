package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestCheckOffline pins that check --offline validates the flags and the
// config file, boards included, without connecting: nothing listens on
// the brokers and Redis given, and a valid file passes.
func TestCheckOffline(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		args         []string
		want         string // in the output
		code         int    // exit status; 0: passes
	}{
		{name: "valid", config: "top-n: 5\nroutes:\n  - {env: prod, pattern: \"^p-\"}\n", want: "skip  kafka: --offline", code: 0},
		{name: "flag", config: "top-n: 500\n", want: "--top-n", code: exitConfig},
		{name: "old name", config: "margin: -3\n", want: "--stability-margin", code: exitConfig},
		{name: "unknown key", config: "colour: red\n", want: `unknown key "colour"`, code: exitConfig},
		{name: "board", config: "boards:\n  - {name: b, events: [gift], member: user_id, kind: nope}\n", want: "kind", code: exitConfig},
		{name: "route", config: "routes:\n  - {env: prod, pattern: \"(\"}\n", want: "route", code: exitConfig},
		{name: "token file", config: "top-n: 5\n", args: []string{"--control-token-file", "/nonexistent/tokens"}, want: "--control-token-file", code: exitConfig},
		{name: "control option", config: "control-max-body-bytes: 1\n", want: "--control-max-body-bytes", code: exitConfig},
		{name: "variable", config: "redis: ${ROSTRUM_TEST_UNSET_VARIABLE}\n", want: "ROSTRUM_TEST_UNSET_VARIABLE is not set", code: exitConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"check", "--offline", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1",
				"--wal-dir", t.TempDir(), "--config", writeConfig(t, tc.config)}, tc.args...)
			var out bytes.Buffer
			err := Main(context.Background(), args, &out, &bytes.Buffer{})
			var ee *exitError
			switch {
			case tc.code == 0 && err != nil:
				t.Fatalf("%v\n%s", err, out.String())
			case tc.code != 0 && (!errors.As(err, &ee) || ee.code != tc.code):
				t.Fatalf("err %v, want exit status %d\n%s", err, tc.code, out.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q, want %q in it", out.String(), tc.want)
			}
		})
	}
}
