package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/internal/cli"
)

// applySources fills every flag that was not given on the command line from,
// in order of precedence, the environment (ROSTRUM_<FLAG>, dashes as
// underscores) and then the YAML config file named by --config (keys are the
// flag names). An unknown key in the file is an error naming it; others are
// keys known although the command does not take them (run's, in the file
// that a command taking fewer settings shares with it). It returns
// the warnings worth logging at start-up (a readable file holding secrets,
// an old flag name). A renamed flag's old name works in every source
// (resolveAliases). A flag whose value is cli.CommandLineOnly is set by the
// command line alone: its variable or key is an error naming it, rather
// than a switch that silently does or does not take effect.
func applySources(fs *flag.FlagSet, configPath string, others map[string]bool) ([]string, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var file map[string]any
	if configPath != "" {
		b, err := readConfig(configPath)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if err := yaml.Unmarshal(b, &file); err != nil {
			return nil, fmt.Errorf("--config %s: %w", configPath, err)
		}
		keys := make([]string, 0, len(file))
		for k := range file {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == boardsKey || k == hintsKey || (k == routesKey && fs.Lookup("route") != nil) {
				continue // read by readBoards, readHints and routeFlags.read
			}
			if (fs.Lookup(k) == nil && !others[k]) || k == "config" {
				return nil, fmt.Errorf("--config %s: unknown key %q (keys are the flag names of `rostrum %s --help-all`)", configPath, k, fs.Name())
			}
		}
	}
	aliasWarnings, err := cli.ResolveAliases(fs, set, true, file, configPath)
	if err != nil {
		return nil, err
	}
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] || f.Name == "config" || cli.IsAlias(fs, f.Name) {
			return
		}
		env := cli.EnvName(f.Name)
		if _, only := f.Value.(cli.CommandLineOnly); only {
			if _, ok := os.LookupEnv(env); ok {
				err = fmt.Errorf("%s is set, but --%s is taken on the command line only", env, f.Name)
			} else if _, ok := file[f.Name]; ok {
				err = fmt.Errorf("--config %s: %s: --%s is taken on the command line only", configPath, f.Name, f.Name)
			}
			return
		}
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s=%q: %v", env, v, e)
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if _, isSecret := f.Value.(*cli.Secret); isSecret {
				// An unquoted 0x1F or 1e3 would arrive as a number and
				// be rendered back as another text than the password.
				if _, isString := v.(string); !isString {
					err = fmt.Errorf("--config %s: %s must be a quoted YAML string", configPath, f.Name)
					return
				}
			}
			s := cli.YAMLFlagText(v)
			if e := fs.Set(f.Name, s); e != nil {
				err = fmt.Errorf("--config %s: %s: %q: %v", configPath, f.Name, s, e)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return append(aliasWarnings, cli.ConfigWarnings(fs, configPath, file)...), nil
}

// parseSources parses args into fs, then fills the flags left unset from
// the environment and the config file (--config, else ROSTRUM_CONFIG). It
// returns the config file's path and the warnings found.
func parseSources(fs *flag.FlagSet, args []string, configFlag *string, others map[string]bool) (string, []string, error) {
	cli.RegisterAliases(fs) // the old names of renamed flags (internal/cli/aliases.go)
	// After a flag that does not parse, a pointer to the grouped help
	// (help.go), which Main prints for -h before the command runs.
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "The flags: rostrum %s -h (every flag: --help-all)\n", fs.Name())
	}
	if err := fs.Parse(args); err != nil {
		return "", nil, err
	}
	if fs.NArg() > 0 {
		return "", nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg := *configFlag
	if cfg == "" {
		cfg = lookupEnv("ROSTRUM_CONFIG")
	}
	warnings, err := applySources(fs, cfg, others)
	return cfg, warnings, err
}

func lookupEnv(k string) string { v, _ := os.LookupEnv(k); return v }
