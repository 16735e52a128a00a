package route

import (
	"fmt"
	"strings"
)

// Parse reads rules in text form: each element of specs holds one or more
// "env=regex" separated by commas (see the package comment for how a comma
// inside a regular expression is told apart).
func Parse(specs ...string) ([]Rule, error) {
	var rules []Rule
	for _, spec := range specs {
		for _, part := range splitRules(spec) {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			env, pattern, ok := strings.Cut(part, "=")
			if !ok {
				return nil, fmt.Errorf("--route %q: want env=regex", part)
			}
			rules = append(rules, Rule{Env: strings.TrimSpace(env), Pattern: pattern})
		}
	}
	return rules, nil
}

// splitRules splits s at each comma that is followed by "env=".
func splitRules(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' && startsRule(s[i+1:]) {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// startsRule reports whether s starts with optional spaces, an environment
// name and '='.
func startsRule(s string) bool {
	s = strings.TrimLeft(s, " ")
	i := 0
	for i < len(s) && envByte(s[i]) {
		i++
	}
	return i > 0 && i < len(s) && s[i] == '='
}

// Flag is a flag.Value collecting --route: repeatable, each value a comma
// list of rules, in the order given.
type Flag struct{ Specs []string }

func (f *Flag) String() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.Specs, ",")
}

// Set appends one --route value after checking that it parses.
func (f *Flag) Set(v string) error {
	if _, err := Parse(v); err != nil {
		return err
	}
	f.Specs = append(f.Specs, v)
	return nil
}

// Rules returns the rules of every value given, in order.
func (f *Flag) Rules() ([]Rule, error) { return Parse(f.Specs...) }
