package cli

import (
	"errors"
	"fmt"
	"strings"
)

// redacted is what every printed form of a secret shows.
const redacted = "[redacted]"

// secret is a password taken from a flag, the environment or the config
// file. Every way of printing it (fmt verbs, %#v, JSON, YAML, text, zap's
// Stringer field) shows "[redacted]", so a secret that ends up in a log
// line, an error or a config dump does not leak; reveal is the one way to
// the value, for the client that sends it. It is a struct, not a string
// type, so that string(s) does not compile.
//
// As a flag.Value it reads any text; an empty secret prints as "" so that
// `-h` shows no default.
type Secret struct{ v string }

func (s Secret) Reveal() string { return s.v }
func (s Secret) IsSet() bool    { return s.v != "" }

func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return redacted
}

func (s Secret) GoString() string             { return s.String() }
func (s Secret) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(s.String())) }
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }
func (s Secret) MarshalYAML() (any, error)    { return s.String(), nil }
func (s *Secret) Set(v string) error          { s.v = v; return nil }

// ScrubAll replaces every set secret in msg by "[redacted]".
func ScrubAll(msg string, secrets ...Secret) string {
	for _, s := range secrets {
		if s.v != "" {
			msg = strings.ReplaceAll(msg, s.v, redacted)
		}
	}
	return msg
}

// ScrubError returns err unchanged when its text holds none of the secrets,
// and otherwise an error whose text has them replaced (the chain is lost,
// which callers of a failed start-up do not need). Client libraries do not
// put passwords into their errors today; this keeps it so if one starts.
func ScrubError(err error, secrets ...Secret) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := ScrubAll(msg, secrets...); clean != msg {
		return errors.New(clean)
	}
	return err
}
