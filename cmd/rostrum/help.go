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

// The grouped `-h` of the commands that take configuration flags
// (docs/DESIGN.md §15). `rostrum <command> -h` prints each group's essential
// flags, each with its default and the environment variable that sets it;
// `--help-all` prints every flag, `--help-group NAME` one group's.

// helpGroup is one heading of the grouped help, in the order printed.
type helpGroup struct {
	key, title string
}

// helpGroups are the groups in the order `-h` prints them. "command" holds
// the flags that belong to one command alone (the demo's meeting, a DLQ
// command's selection); "other" is where a flag registered without a group
// falls (TestHelpPlacesEveryFlag fails then). A flag's group is given where
// it is registered (cli.FlagSet.Group).
var helpGroups = []helpGroup{
	{"command", ""}, // titled after the command
	{"kafka", "Kafka"},
	{"redis", "Redis"},
	{"ranking", "Ranking and stability"},
	{"http", "HTTP and security"},
	{"leaderboards", "Leaderboards"},
	{"limits", "Limits and tuning"},
	{"ops", "Operations"},
	{"other", "Other"},
}

// placeOf is where fs shows flag name: the place its registration gave it
// (cli.Group), or "other" in the short help for a flag registered without
// one, so that it is not lost (TestHelpPlacesEveryFlag fails then).
func placeOf(fs *cli.FlagSet, name string) cli.Place {
	if p, ok := fs.Place(name); ok {
		return p
	}
	return cli.Place{Group: "other", Essential: true}
}

// helpCommand is one command whose -h is grouped.
type helpCommand struct {
	// words are the command's words after `rostrum` (`dlq inspect`).
	words   string
	summary string
	// flags names the configCommands entry whose flags it takes.
	flags string
}

// helpCommands are the commands with a grouped -h: those whose flags the
// configuration reference lists.
var helpCommands = []helpCommand{
	{"run", "Consumes callbacks and keeps the meeting rankings.", "run"},
	{"check", "Checks, without consuming, what `rostrum run` with the same flags needs; one line per check.\n" +
		"With --create-topics it first creates the missing topics (--topic-partitions, --output-partitions, …).\n" +
		"Exit status: 0 all passed, 2 configuration, 3 Kafka brokers, 4 topics, 5 consumer group,\n" +
		"6 Redis, 7 Lua scripts (the first class that failed). --offline checks the configuration only.", "check"},
	{"boards prune", "Lists (--delete: deletes) the keys of boards removed from the config.", "boards prune"},
	{"wal replay", "Re-applies a WAL directory to Redis, as the processor applied it.", "wal replay"},
	{"wal inspect", "Looks into a WAL directory.", "wal inspect"},
	{"gateway", "Takes HTTP callbacks into the callback topics, routed by room to environments.", "gateway"},
	{"demo", "Everything embedded: Kafka broker, Redis, a simulated meeting.", "demo"},
	{"dlq inspect", "Counts and samples the DLQ.", "dlq inspect"},
	{"dlq redrive", "Re-produces DLQ records to their topics.", "dlq redrive"},
	{"codec explain", "Prints the score layouts and a few encoded examples.", "codec explain"},
}

// findHelpCommand is the command args start with, and the args after its
// words; ok is false for a command without a grouped -h.
func findHelpCommand(args []string) (c helpCommand, cc configCommand, rest []string, ok bool) {
	for _, h := range helpCommands {
		w := strings.Fields(h.words)
		if len(args) < len(w) || !slices.Equal(args[:len(w)], w) {
			continue
		}
		for _, x := range configCommands {
			if x.name == h.flags {
				return h, x, args[len(w):], true
			}
		}
	}
	return helpCommand{}, configCommand{}, nil, false
}

// commandHelp prints the help args ask for, if they ask for it: -h (or
// -help) prints the short help, --help-all every flag, --help-group NAME
// one group. It parses args with the command's own flags, so that a flag's
// value that reads "-h" is not taken for a request. done is false when
// args ask for no help (or do not parse: the command reports that); err
// is flag.ErrHelp after a help was printed, which exits with status 0.
func commandHelp(args []string, stdout io.Writer) (done bool, err error) {
	h, c, rest, ok := findHelpCommand(args)
	if !ok {
		return false, nil
	}
	fs := cli.NewFlagSet(h.words, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	c.register(fs)
	cli.RegisterAliases(fs.FlagSet)
	all := fs.Bool("help-all", false, "")
	group := fs.String("help-group", "", "")
	err = fs.Parse(rest)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, err = io.WriteString(stdout, helpText(h, c, ""))
	case err != nil:
		return false, nil
	case *all:
		_, err = io.WriteString(stdout, helpText(h, c, "all"))
	case *group != "":
		if !slices.ContainsFunc(helpGroups, func(g helpGroup) bool { return g.key == *group }) {
			return true, fmt.Errorf("--help-group %q: groups are %s", *group, strings.Join(groupKeys(), ", "))
		}
		_, err = io.WriteString(stdout, helpText(h, c, *group))
	default:
		return false, nil
	}
	if err != nil {
		return true, err
	}
	return true, flag.ErrHelp
}

func groupKeys() []string {
	var keys []string
	for _, g := range helpGroups {
		keys = append(keys, g.key)
	}
	return keys
}

// helpText is the help of h: with view "" each group's essential flags and
// a count of the others, with "all" every flag, else the one group named.
func helpText(h helpCommand, c configCommand, view string) string {
	fs := cli.NewFlagSet(h.words, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.register(fs)
	ref := commandFlags(c)
	byGroup := map[string][]*flag.Flag{}
	deprecated := cli.DeprecatedFlags()
	fs.VisitAll(func(f *flag.Flag) {
		if deprecated[f.Name] != "" {
			return // an old name: only its new one is shown
		}
		g := placeOf(fs, f.Name).Group
		byGroup[g] = append(byGroup[g], f)
	})

	var b strings.Builder
	fmt.Fprintf(&b, "Usage: rostrum %s [flags]\n\n%s\n", h.words, h.summary)
	if c.sources == fromAll {
		b.WriteString("Each flag may also come from its variable or, under its own name, from the --config file.\n")
	}
	for _, g := range helpGroups {
		flags := byGroup[g.key]
		if len(flags) == 0 || (view != "" && view != "all" && view != g.key) {
			continue
		}
		title := g.title
		if g.key == "command" {
			title = "rostrum " + h.words
		}
		fmt.Fprintf(&b, "\n%s:\n", title)
		more := 0
		for _, f := range flags {
			if view == "" && !placeOf(fs, f.Name).Essential {
				more++
				continue
			}
			b.WriteString(flagLine(f, ref[f.Name]))
		}
		if more > 0 {
			fmt.Fprintf(&b, "  %d more: rostrum %s --help-all (or --help-group %s)\n", more, h.words, g.key)
		}
	}
	return b.String()
}

// flagLine is one flag of the help: its name and kind, the variable that
// sets it, its usage text and its default.
func flagLine(f *flag.Flag, ref configFlag) string {
	kind, usage := flag.UnquoteUsage(f)
	name := "--" + f.Name
	if kind != "" {
		name += " " + kind
	}
	env := ref.env
	if env == "" {
		env = "-"
	}
	line := fmt.Sprintf("  %-34s %-38s %s", name, env, usage)
	if ref.def != "" && !isZeroDefault(f) {
		line += fmt.Sprintf(" (default %s)", ref.def)
	}
	return line + "\n"
}

// isZeroDefault reports whether f's default is its type's zero value, which
// the help does not print (as flag.PrintDefaults does not).
func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}
