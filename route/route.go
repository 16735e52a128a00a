package route

import (
	"fmt"
	"regexp"
	"strings"
)

// Rule sends the room ids matching Pattern to environment Env.
type Rule struct {
	Env     string `yaml:"env"`
	Pattern string `yaml:"pattern"` // a Go (RE2) regular expression, unanchored unless it says ^ or $
}

// Table is a compiled, ordered set of rules with an optional default. It
// is immutable after New, so it is safe for concurrent use. A nil *Table
// routes every room to no environment.
type Table struct {
	rules []compiled
	def   string
}

type compiled struct {
	env string
	re  *regexp.Regexp
}

// New compiles rules, in order, with def ("" for none) as the default
// environment. Errors name the rule ("--route prod=…") and say why.
func New(rules []Rule, def string) (*Table, error) {
	t := &Table{def: def}
	if def != "" {
		if err := checkEnv(def); err != nil {
			return nil, fmt.Errorf("--route-default %q: %v", def, err)
		}
	}
	for _, r := range rules {
		if err := checkEnv(r.Env); err != nil {
			return nil, fmt.Errorf("--route %s=%s: environment %q: %v", r.Env, r.Pattern, r.Env, err)
		}
		if r.Pattern == "" {
			return nil, fmt.Errorf("--route %s=: empty pattern (use --route-default for a catch-all)", r.Env)
		}
		re, err := regexp.Compile(r.Pattern)
		if err != nil {
			return nil, fmt.Errorf("--route %s=%s: %v", r.Env, r.Pattern, err)
		}
		t.rules = append(t.rules, compiled{r.Env, re})
	}
	return t, nil
}

// checkEnv holds environment names to the processor's --env syntax
// ([a-z0-9][a-z0-9_-]{0,31}), so every routed environment can be served.
func checkEnv(env string) error {
	if env == "" || len(env) > 32 || env[0] == '_' || env[0] == '-' {
		return fmt.Errorf("must be 1..32 bytes of [a-z0-9_-], starting with a letter or digit")
	}
	for i := 0; i < len(env); i++ {
		if !envByte(env[i]) {
			return fmt.Errorf("invalid character %q (allowed [a-z0-9_-])", env[i])
		}
	}
	return nil
}

func envByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Env returns the environment of room: that of the first rule whose
// pattern matches it, else the default; ok is false when neither applies.
func (t *Table) Env(room string) (env string, ok bool) {
	if t == nil {
		return "", false
	}
	for i := range t.rules {
		if t.rules[i].re.MatchString(room) {
			return t.rules[i].env, true
		}
	}
	return t.def, t.def != ""
}

// EnvBytes is Env for a room id in bytes, such as a room_id read from a
// callback body, without making a string of it.
func (t *Table) EnvBytes(room []byte) (env string, ok bool) {
	if t == nil {
		return "", false
	}
	for i := range t.rules {
		if t.rules[i].re.Match(room) {
			return t.rules[i].env, true
		}
	}
	return t.def, t.def != ""
}

// Belongs reports whether room routes to env.
func (t *Table) Belongs(env, room string) bool {
	e, ok := t.Env(room)
	return ok && e == env
}

// Envs lists every environment a room can route to, rules first in their
// order, then the default, each once.
func (t *Table) Envs() []string {
	if t == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(e string) {
		if e != "" && !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	for _, r := range t.rules {
		add(r.env)
	}
	add(t.def)
	return out
}

// Default is the default environment, "" for none.
func (t *Table) Default() string {
	if t == nil {
		return ""
	}
	return t.def
}

// Empty reports whether t routes no room anywhere.
func (t *Table) Empty() bool { return t == nil || len(t.rules) == 0 && t.def == "" }

// String is the text form: the rules in order, then the default as
// "*=env".
func (t *Table) String() string {
	if t == nil {
		return ""
	}
	parts := make([]string, 0, len(t.rules)+1)
	for _, r := range t.rules {
		parts = append(parts, r.env+"="+r.re.String())
	}
	if t.def != "" {
		parts = append(parts, "*="+t.def)
	}
	return strings.Join(parts, ",")
}
