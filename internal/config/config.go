// Package config holds what rostrum's configurable packages share about
// bad configuration: a FieldError names the Go field that is wrong, so that
// each front end (the command line, a YAML file, a test) reports it in its
// own words; the binary translates field names into flag names.
package config

import (
	"errors"
	"fmt"
)

// FieldError says that one field of a configuration struct is invalid.
type FieldError struct {
	Struct string // e.g. "processor.Config"
	Field  string // the Go field name, e.g. "TopN"
	Msg    string // what is wrong, e.g. "must be between 1 and 100, got 0"
}

func (e *FieldError) Error() string { return e.Struct + "." + e.Field + " " + e.Msg }

// Errorf returns a *FieldError for field of strct with a formatted message.
func Errorf(strct, field, format string, args ...any) error {
	return &FieldError{Struct: strct, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Rename rewrites a *FieldError in err's chain into "<name> <msg>" when
// names maps its field (for example "TopN" → "--top-n"); any other error is
// returned unchanged.
func Rename(err error, names map[string]string) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err
	}
	if n, ok := names[fe.Field]; ok {
		return fmt.Errorf("%s %s", n, fe.Msg)
	}
	return err
}
