package main

import (
	"strings"
	"testing"
)

// TestConfigInterpolate pins ${VAR}, ${VAR:-default} and $$ in the values
// of a config file, and that the lines of the file stay where they were.
func TestConfigInterpolate(t *testing.T) {
	env := map[string]string{"HOST": "redis-1", "PORT": "6380", "EMPTY": "", "PW": "a: b # c", "N": "5"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		name, in, want, wantErr string
	}{
		{name: "none", in: "redis: r:6379\n", want: "redis: r:6379\n"},
		{name: "plain", in: "redis: ${HOST}:${PORT}\n", want: "redis: redis-1:6380\n"},
		{name: "number stays a number", in: "top-n: ${N}\n", want: "top-n: 5\n"},
		{name: "default when unset", in: "env: ${NOPE:-prod}\n", want: "env: prod\n"},
		{name: "default when empty", in: "env: ${EMPTY:-prod}\n", want: "env: prod\n"},
		{name: "set wins over default", in: "env: ${HOST:-prod}\n", want: "env: redis-1\n"},
		{name: "dollar escape", in: "redis-password: \"p$$w\"\n", want: "redis-password: \"p$w\"\n"},
		{name: "lone dollar stays", in: "redis-password: \"p$w${N}\"\n", want: "redis-password: \"p$w5\"\n"},
		{name: "value cannot reshape", in: "redis-password: ${PW}\nenv: x\n", want: "redis-password: \"a: b # c\"\nenv: x\n"},
		{name: "single quoted", in: "env: '${HOST}'\n", want: "env: \"redis-1\"\n"},
		{name: "flow list quoted", in: "brokers: [\"${HOST}:9092\", k2:9092]\n", want: "brokers: [\"redis-1:9092\", k2:9092]\n"},
		{name: "two on a line", in: "routes: [{env: \"${HOST}\", pattern: \"^${N}-\"}]\n", want: "routes: [{env: \"redis-1\", pattern: \"^5-\"}]\n"},
		{name: "nested keeps lines", in: "# c\n\nboards:\n  - name: ${HOST}\n\n    top-n: 3\n", want: "# c\n\nboards:\n  - name: redis-1\n\n    top-n: 3\n"},
		{name: "unset", in: "env: x\nredis-password: ${MISSING}\n", wantErr: "line 2: redis-password: ${MISSING}: MISSING is not set"},
		{name: "unset nested", in: "boards:\n  - name: ${MISSING}\n", wantErr: "line 2: boards[0].name"},
		{name: "unclosed", in: "env: ${HOST\n", wantErr: "no closing }"},
		{name: "bad name", in: "env: ${1X}\n", wantErr: "not a variable name"},
		{name: "block scalar", in: "env: |\n  ${HOST}\n", wantErr: "one-line values only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := interpolate([]byte(tc.in), lookup)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConfigInterpolateSources pins that every reader of the file sees the
// interpolated text: a flag key and the routes.
func TestConfigInterpolateSources(t *testing.T) {
	t.Setenv("RX_REDIS", "redis-9:6379")
	t.Setenv("RX_ENV", "gray")
	p := writeConfig(t, "redis: ${RX_REDIS}\nenv: ${RX_ENV}\nroutes:\n  - {env: \"${RX_ENV}\", pattern: \"^g-\"}\n")
	f, _, err := parseRunSources(t, "--config", p)
	if err != nil {
		t.Fatal(err)
	}
	if f.redis != "redis-9:6379" || f.env != "gray" {
		t.Errorf("redis %q env %q", f.redis, f.env)
	}
	if err := f.routes.read(p); err != nil || len(f.routes.file) != 1 || f.routes.file[0].Env != "gray" {
		t.Errorf("routes %+v, %v", f.routes.file, err)
	}
	p = writeConfig(t, "redis: ${RX_UNSET_VAR}\n")
	if _, _, err := parseRunSources(t, "--config", p); err == nil || !strings.Contains(err.Error(), "RX_UNSET_VAR is not set") || !strings.Contains(err.Error(), p) {
		t.Errorf("unset variable: %v", err)
	}
}
