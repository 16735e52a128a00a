package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rostrumhq/rostrum/internal/cli"
)

// configCommand is one command whose flags `rostrum help config` lists.
type configCommand struct {
	name string
	// also names the commands that take exactly these flags.
	also string
	// register registers the command's flags into fs, as the command does.
	register func(fs *cli.FlagSet)
	// base, when set, is the command whose flags this one takes too: only
	// the flags that are new or differ from it are listed.
	base string
	// sources says where else than the command line a flag is read from.
	sources sources
}

// sources are where a command reads its flags from besides the command line.
type sources int

const (
	// fromAll: ROSTRUM_<FLAG> and the --config file (parseSources).
	fromAll sources = iota
	// fromSecurityEnv: ROSTRUM_<FLAG> for the --kafka-* and --redis-*
	// flags only (cli.ApplySecurityEnv); no file.
	fromSecurityEnv
	// fromFlags: the command line only.
	fromFlags
)

// configCommands are the commands the reference lists, in order. Each
// registers its flags exactly as the command itself does, so the reference
// cannot drift from the binary. The developer tools of rostrum-dev (the
// benchmarks, the simulator) are described in docs/PERFORMANCE.md and by
// their `-h`.
var configCommands = []configCommand{
	{name: "run", also: "`rostrum check` (with one flag more, below) takes the same flags (and reads the same variables and file), so that they see the configuration the processors run with; `wal replay` and `boards prune` take those of them they need (below) and accept run's file, leaving its other keys unused",
		register: func(fs *cli.FlagSet) { var f runFlags; f.register(fs) }},
	{name: "check", base: "run", register: func(fs *cli.FlagSet) {
		var f runFlags
		var c checkFlags
		f.register(fs)
		c.register(fs)
	}},
	{name: "gateway", register: func(fs *cli.FlagSet) { var f gatewayFlags; f.register(fs) }},
	{name: "demo", base: "run", register: func(fs *cli.FlagSet) { var f runFlags; var d demoFlags; d.register(fs, &f) }},
	{name: "wal replay", register: func(fs *cli.FlagSet) { var f walReplayFlags; f.register(fs) }},
	{name: "boards prune", register: func(fs *cli.FlagSet) { var f pruneFlags; f.register(fs) }},
	{name: "dlq inspect", sources: fromSecurityEnv, register: func(fs *cli.FlagSet) {
		var f dlqFlags
		var c dlqCommandFlags
		f.register(fs)
		c.register(fs, "inspect")
	}},
	{name: "dlq redrive", sources: fromSecurityEnv, register: func(fs *cli.FlagSet) {
		var f dlqFlags
		var c dlqCommandFlags
		f.register(fs)
		c.register(fs, "redrive")
	}},
	{name: "wal inspect", sources: fromFlags, register: func(fs *cli.FlagSet) { var f walInspectFlags; f.register(fs) }},
	{name: "codec explain", sources: fromFlags, register: func(fs *cli.FlagSet) { var f codecFlags; f.register(fs) }},
}

// cmdHelp prints the usage, or with `config` the configuration reference.
func cmdHelp(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if args[0] != "config" {
		return fmt.Errorf("help: unknown topic %q (topics: config)", args[0])
	}
	fs := cli.NewFlagSet("help config", flag.ContinueOnError)
	markdown := fs.Bool("markdown", false, "print Markdown (the generated part of docs/configuration.md)")
	jsonSchema := fs.Bool("schema", false, "print the JSON Schema of the --config file (docs/config.schema.json)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("help config: unexpected argument %q", fs.Arg(0))
	}
	if *jsonSchema {
		_, err := stdout.Write(configSchema())
		return err
	}
	if !*markdown {
		return errors.New("help config: only --markdown and --schema are supported; for one command's flags: rostrum <command> -h")
	}
	_, err := io.WriteString(stdout, configMarkdown())
	return err
}

// configFlag is one flag as the reference lists it.
type configFlag struct {
	name, env, key, def, usage string
}

// commandFlags registers c's flags into a fresh FlagSet and lists them in
// name order. A flag the command sets itself before parsing (demo's
// defaults) counts as given, so neither variable nor file reaches it.
func commandFlags(c configCommand) map[string]configFlag {
	fs := cli.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.register(fs)
	fixed := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { fixed[f.Name] = true })
	out := map[string]configFlag{}
	fs.VisitAll(func(f *flag.Flag) {
		cf := configFlag{
			name:  f.Name,
			env:   cli.EnvName(f.Name),
			key:   f.Name,
			def:   f.DefValue,
			usage: f.Usage,
		}
		if _, ok := f.Value.(*cli.Secret); ok {
			cf.def = "" // a secret never shows a value
		}
		_, cmdline := f.Value.(cli.CommandLineOnly)
		switch {
		case c.sources == fromFlags, fixed[f.Name], cmdline:
			cf.env, cf.key = "", ""
		case c.sources == fromSecurityEnv:
			cf.key = ""
			if !strings.HasPrefix(f.Name, "kafka-") && !strings.HasPrefix(f.Name, "redis-") {
				cf.env = ""
			}
		case f.Name == "config":
			cf.key = "" // the file names no file; ROSTRUM_CONFIG names it
		}
		out[f.Name] = cf
	})
	return out
}

// configMarkdown is the generated part of docs/configuration.md: per
// command, a table of its flags with their variable, YAML key, default
// and usage text.
func configMarkdown() string {
	var b strings.Builder
	byName := map[string]map[string]configFlag{}
	for i, c := range configCommands {
		flags := commandFlags(c)
		byName[c.name] = flags
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### rostrum %s\n\n", c.name)
		if c.also != "" {
			fmt.Fprintf(&b, "%s.\n\n", c.also)
		}
		switch c.sources {
		case fromSecurityEnv:
			b.WriteString("No config file; of the environment only the `ROSTRUM_KAFKA_*` and `ROSTRUM_REDIS_*` variables.\n\n")
		case fromFlags:
			b.WriteString("The command line only.\n\n")
		}
		names := make([]string, 0, len(flags))
		if base, ok := byName[c.base]; ok {
			fmt.Fprintf(&b, "The flags of [`rostrum %s`](#rostrum-%s), and these, added or with another default. "+
				"A flag whose variable and key are \"–\" here is set by the command itself: only the command line changes it.\n\n", c.base, c.base)
			for n, f := range flags {
				if bf, ok := base[n]; !ok || bf != f {
					names = append(names, n)
				}
			}
		} else {
			for n := range flags {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		b.WriteString("| flag | variable | YAML key | default | meaning |\n| --- | --- | --- | --- | --- |\n")
		for _, n := range names {
			f := flags[n]
			fmt.Fprintf(&b, "| `--%s` | %s | %s | %s | %s |\n", f.name, code(f.env), code(f.key), code(f.def), cell(f.usage))
		}
	}
	return b.String()
}

// code renders s as Markdown code, or "–" when empty.
func code(s string) string {
	if s == "" {
		return "–"
	}
	return "`" + strings.ReplaceAll(s, "`", "") + "`"
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
