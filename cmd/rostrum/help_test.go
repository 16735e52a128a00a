package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/internal/cli"
)

// TestHelpPlacesEveryFlag fails for a flag registered without a group, or
// under a group the help has no heading for: each flag is given its group
// and its place in the short help where it is registered.
func TestHelpPlacesEveryFlag(t *testing.T) {
	for _, c := range configCommands {
		fs := cli.NewFlagSet(c.name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.register(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if cli.DeprecatedFlags()[f.Name] != "" {
				return
			}
			p, ok := fs.Place(f.Name)
			if !ok {
				t.Errorf("rostrum %s --%s: registered without a group: register it through fs.Group", c.name, f.Name)
			}
			if !slices.ContainsFunc(helpGroups, func(g helpGroup) bool { return g.key == p.Group }) {
				t.Errorf("rostrum %s --%s: group %q has no heading in helpGroups", c.name, f.Name, p.Group)
			}
		})
	}
}

// help runs rostrum with args and returns what it printed.
func help(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Main(context.Background(), args, &stdout, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("rostrum %s: %v, want flag.ErrHelp (exit status 0)", strings.Join(args, " "), err)
	}
	if stderr.Len() != 0 {
		t.Errorf("rostrum %s: stderr %q, want the help on stdout only", strings.Join(args, " "), stderr.String())
	}
	return stdout.String()
}

// TestHelpShort pins that -h is short and --help-all lists every flag,
// each with the variable that parseSources reads for it.
func TestHelpShort(t *testing.T) {
	for _, h := range helpCommands {
		args := strings.Fields(h.words)
		short := help(t, append(args, "-h")...)
		if n := strings.Count(short, "\n"); n >= 60 {
			t.Errorf("rostrum %s -h: %d lines, want fewer than 60:\n%s", h.words, n, short)
		}
		all := help(t, append(args, "--help-all")...)
		_, c, _, _ := findHelpCommand(args)
		fs := cli.NewFlagSet(c.name, flag.ContinueOnError)
		c.register(fs)
		for _, f := range commandFlags(c) {
			if cli.DeprecatedFlags()[f.name] != "" {
				if strings.Contains(all, "--"+f.name+" ") {
					t.Errorf("rostrum %s --help-all shows the old name --%s", h.words, f.name)
				}
				continue
			}
			if !strings.Contains(all, "--"+f.name+" ") {
				t.Errorf("rostrum %s --help-all: no --%s", h.words, f.name)
			}
			if f.env != "" && !strings.Contains(all, " "+f.env+" ") {
				t.Errorf("rostrum %s --help-all: --%s without its variable %s", h.words, f.name, f.env)
			}
			if p := placeOf(fs, f.name); !p.Essential && strings.Contains(short, "--"+f.name+" ") {
				t.Errorf("rostrum %s -h shows the tuning flag --%s", h.words, f.name)
			}
		}
	}
	if g := help(t, "run", "--help-group", "limits"); !strings.Contains(g, "--max-record-bytes") || strings.Contains(g, "--brokers") {
		t.Errorf("rostrum run --help-group limits:\n%s", g)
	}
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"run", "--help-group", "nope"}, &out, io.Discard); err == nil || !strings.Contains(err.Error(), "kafka") {
		t.Errorf("--help-group nope: %v, want an error listing the groups", err)
	}
}

// TestHelpEnvMatchesParseSources sets each variable the help shows for a
// run flag and checks that parseSources sets that flag from it.
func TestHelpEnvMatchesParseSources(t *testing.T) {
	_, c, _, _ := findHelpCommand([]string{"run"})
	for _, f := range commandFlags(c) {
		if f.env == "" || f.name == "config" {
			continue
		}
		fs := cli.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var rf runFlags
		rf.register(fs)
		v := fs.Lookup(f.name).DefValue
		if fs.Set(f.name, v) != nil {
			v = "x" // a list without default: one element
		}
		fs = cli.NewFlagSet("run", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		rf = runFlags{}
		rf.register(fs)
		t.Setenv(f.env, v)
		if _, _, err := parseSources(fs.FlagSet, nil, &rf.config, nil); err != nil {
			t.Fatalf("%s=%q: %v", f.env, v, err)
		}
		set := false
		fs.Visit(func(g *flag.Flag) { set = set || g.Name == f.name })
		if !set {
			t.Errorf("%s does not set --%s", f.env, f.name)
		}
		os.Unsetenv(f.env) // t.Setenv restores it at the end
	}
}
