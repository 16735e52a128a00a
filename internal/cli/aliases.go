package cli

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"sort"
	"strings"
)

// deprecatedFlags maps each old flag name that still works to its new name
// (docs/DESIGN.md §15). Byte limits end in -bytes; the hysteresis knobs
// start with stability-. An old name works as a flag, as its ROSTRUM_
// variable and as a config key, with a warning at start, until 0.2.0
// (CHANGELOG.md); the help and the configuration reference show only the
// new name. Only scalar flags may be renamed: sameValue sets the new flag
// to compare.
var deprecatedFlags = map[string]string{
	"control-max-body": "control-max-body-bytes",
	"dwell":            "stability-dwell",
	"grace":            "stability-grace",
	"margin":           "stability-margin",
	"due-interval":     "stability-due-interval",
}

// DeprecatedFlags returns a copy of the map of each old flag name that
// still works to its new name.
func DeprecatedFlags() map[string]string { return maps.Clone(deprecatedFlags) }

// DeprecatedRemoval is the release that drops the old names.
const DeprecatedRemoval = "0.2.0"

// aliasValue is the hidden flag of an old name: it keeps what it was given
// for ResolveAliases to hand to the new flag.
type aliasValue struct {
	value string
	set   bool
}

func (a *aliasValue) String() string { return a.value }
func (a *aliasValue) Set(s string) error {
	a.value, a.set = s, true
	return nil
}

// aliasBool is the aliasValue of an old name of a boolean flag, so that
// --old alone means --old=true as it did.
type aliasBool struct{ aliasValue }

func (*aliasBool) IsBoolFlag() bool { return true }

// RegisterAliases registers into fs the old name of each of its renamed
// flags, as a hidden flag. Call it after the command's register functions
// and before fs.Parse.
func RegisterAliases(fs *flag.FlagSet) {
	for old, name := range deprecatedFlags {
		f := fs.Lookup(name)
		if f == nil || fs.Lookup(old) != nil {
			continue
		}
		var v flag.Value = &aliasValue{}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			v = &aliasBool{}
		}
		fs.Var(v, old, "deprecated: --"+name)
	}
}

// IsAlias reports whether name is the hidden flag of an old name.
func IsAlias(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	switch f.Value.(type) {
	case *aliasValue, *aliasBool:
		return true
	}
	return false
}

// ResolveAliases hands what each old name was given to its new flag, one
// source at a time in the order of precedence: the command line, then the
// environment (unless env is false), then the config file (file, nil when
// none). A source that
// gives both names different values is an error naming both; each old
// name used is a warning. set holds the flags the command line gave and
// gains the new flags set here, so that applySources leaves them alone.
func ResolveAliases(fs *flag.FlagSet, set map[string]bool, env bool, file map[string]any, configPath string) ([]string, error) {
	olds := make([]string, 0, len(deprecatedFlags))
	for old := range deprecatedFlags {
		if IsAlias(fs, old) {
			olds = append(olds, old)
		}
	}
	sort.Strings(olds)
	var warnings []string
	for _, old := range olds {
		name := deprecatedFlags[old]
		warn := func(form string) {
			warnings = append(warnings, fmt.Sprintf("%s is deprecated: write %s (the old name goes in %s)", form, newForm(form, old, name), DeprecatedRemoval))
		}
		// The command line.
		if set[old] {
			v := fs.Lookup(old).Value.String()
			if set[name] {
				if !sameValue(fs, name, v, fs.Lookup(name).Value.String()) {
					return nil, fmt.Errorf("--%s and --%s (its new name) are both given, with different values: give only --%s", old, name, name)
				}
			} else if err := fs.Set(name, v); err != nil {
				return nil, fmt.Errorf("--%s: %q: %v", old, v, err)
			}
			set[name] = true
			warn("--" + old)
			continue
		}
		if set[name] {
			continue
		}
		// The environment.
		oldEnv, newEnv := EnvName(old), EnvName(name)
		ov, oldOK := os.LookupEnv(oldEnv)
		nv, newOK := os.LookupEnv(newEnv)
		oldOK, newOK = oldOK && env, newOK && env
		switch {
		case oldOK && newOK:
			if !sameValue(fs, name, ov, nv) {
				return nil, fmt.Errorf("%s and %s (its new name) are both set, with different values: set only %s", oldEnv, newEnv, newEnv)
			}
			warn(oldEnv)
			continue // applySources sets it from newEnv
		case oldOK:
			if err := fs.Set(name, ov); err != nil {
				return nil, fmt.Errorf("%s=%q: %v", oldEnv, ov, err)
			}
			set[name] = true
			warn(oldEnv)
			continue
		case newOK:
			continue
		}
		// The config file.
		o, oldOK := file[old]
		n, newOK := file[name]
		switch {
		case oldOK && newOK:
			if !sameValue(fs, name, YAMLFlagText(o), YAMLFlagText(n)) {
				return nil, fmt.Errorf("--config %s: %s and %s (its new name) are both given, with different values: give only %s", configPath, old, name, name)
			}
			warn("config key " + old)
		case oldOK:
			s := YAMLFlagText(o)
			if err := fs.Set(name, s); err != nil {
				return nil, fmt.Errorf("--config %s: %s: %q: %v", configPath, old, s, err)
			}
			set[name] = true
			warn("config key " + old)
		}
	}
	return warnings, nil
}

// newForm is form (a flag, variable or key of the old name) with the new
// name.
func newForm(form, old, name string) string {
	switch form {
	case "--" + old:
		return "--" + name
	case EnvName(old):
		return EnvName(name)
	}
	return "config key " + name
}

// sameValue reports whether a and b set flag name to the same value
// ("90s" and "1m30s" do); it leaves the flag as it found it.
func sameValue(fs *flag.FlagSet, name, a, b string) bool {
	f := fs.Lookup(name)
	saved := f.Value.String()
	defer func() { _ = f.Value.Set(saved) }()
	if f.Value.Set(a) != nil {
		return a == b
	}
	sa := f.Value.String()
	if f.Value.Set(b) != nil {
		return false
	}
	return sa == f.Value.String()
}

// EnvName is the variable parseSources reads for flag name.
func EnvName(name string) string {
	return "ROSTRUM_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ParseWithAliases parses args into fs, the old names of its renamed flags
// included, for a command that reads the command line only. It returns a
// warning for each old name used.
func ParseWithAliases(fs *flag.FlagSet, args []string) ([]string, error) {
	RegisterAliases(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return ResolveAliases(fs, set, false, nil, "")
}
