package main

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// readConfig reads the YAML config file at path with the environment
// variables its values name put in (interpolate). Every reader of the file
// (applySources, readBoards, readHints, routeFlags.read) reads it through
// here, so that they all see the same text.
func readConfig(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, err = interpolate(b, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// interpolate puts environment variables into the scalar values of the YAML
// document b (docs/configuration.md, docs/DESIGN.md §15):
//
//	${VAR}           the value of VAR; an error naming VAR and the key when VAR is unset
//	${VAR:-default}  the value of VAR, or default when VAR is unset or empty
//	$$               one $
//
// A $ followed by anything else stays as it is. Only values are
// interpolated, never keys, and only after the document is parsed: a
// variable's value is always one scalar, whatever it holds (a ": " or a
// "#" cannot change the document's shape). The text is rewritten in place,
// one value at a time, so that the lines of later errors still match the
// file: a value that would read as another plain scalar is written
// double-quoted. In a flow collection ([a, b]) write "${VAR}" quoted, as
// YAML reads { and } there as its own. A value spanning lines (a block
// scalar) cannot be interpolated: an error says so.
func interpolate(b []byte, lookup func(string) (string, bool)) ([]byte, error) {
	if !bytes.Contains(b, []byte("${")) && !bytes.Contains(b, []byte("$$")) {
		return b, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	type edit struct {
		line, col int // 1-based, as yaml.Node's; col in runes
		old, new  string
	}
	var edits []edit
	var walk func(n *yaml.Node, key string) error
	walk = func(n *yaml.Node, key string) error {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if err := walk(c, key); err != nil {
					return err
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if key != "" {
					k = key + "." + k
				}
				if err := walk(n.Content[i+1], k); err != nil {
					return err
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if err := walk(c, fmt.Sprintf("%s[%d]", key, i)); err != nil {
					return err
				}
			}
		case yaml.ScalarNode:
			if !strings.Contains(n.Value, "${") && !strings.Contains(n.Value, "$$") {
				return nil
			}
			v, err := expand(n.Value, lookup)
			if err != nil {
				return fmt.Errorf("line %d: %s: %w", n.Line, key, err)
			}
			old, err := scalarSource(b, n)
			if err != nil {
				return fmt.Errorf("line %d: %s: %w", n.Line, key, err)
			}
			edits = append(edits, edit{n.Line, n.Column, old, scalarText(v, n.Style)})
		}
		return nil
	}
	if err := walk(&doc, ""); err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(b), "\n")
	// Right to left, so that an edit leaves the columns of the others.
	sort.Slice(edits, func(i, j int) bool {
		if edits[i].line != edits[j].line {
			return edits[i].line < edits[j].line
		}
		return edits[i].col > edits[j].col
	})
	for _, e := range edits {
		r := []rune(lines[e.line-1])
		start := e.col - 1
		end := start + len([]rune(e.old))
		lines[e.line-1] = string(r[:start]) + e.new + string(r[end:])
	}
	return []byte(strings.Join(lines, "")), nil
}

// expand replaces ${VAR}, ${VAR:-default} and $$ in s.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	var out strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			out.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			out.WriteByte('$')
			i++
			continue
		case '{':
		default:
			out.WriteByte('$')
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%s: no closing }", s[i:])
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("${%s}: %q is not a variable name (letters, digits and _; write $$ for a $)", ref, name)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("${%s}: %s is not set (${%s:-default} gives a default)", name, name, name)
		}
		out.WriteString(v)
		i += end
	}
	return out.String(), nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// scalarSource is the text of scalar n in b, quotes included; an error for
// a scalar that spans lines.
func scalarSource(b []byte, n *yaml.Node) (string, error) {
	lines := strings.SplitAfter(string(b), "\n")
	if n.Line < 1 || n.Line > len(lines) {
		return "", fmt.Errorf("cannot locate the value")
	}
	r := []rune(strings.TrimRight(lines[n.Line-1], "\r\n"))
	start := n.Column - 1
	if start < 0 || start >= len(r) {
		return "", fmt.Errorf("cannot locate the value")
	}
	rest := string(r[start:])
	switch n.Style {
	case 0: // plain
		if strings.HasPrefix(rest, n.Value) {
			return n.Value, nil
		}
	case yaml.DoubleQuotedStyle:
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '"':
				return rest[:i+1], nil
			}
		}
	case yaml.SingleQuotedStyle:
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\'' {
				if i+1 < len(rest) && rest[i+1] == '\'' {
					i++
					continue
				}
				return rest[:i+1], nil
			}
		}
	}
	return "", fmt.Errorf("${…} is supported in one-line values only (plain or quoted)")
}

// scalarText is v written as a YAML scalar: plain when the value was plain
// and v reads back as the same plain scalar in any context, else
// double-quoted.
func scalarText(v string, style yaml.Style) string {
	if style == 0 && plainSafe(v) {
		return v
	}
	return strconv.Quote(v) // a JSON-compatible string: valid YAML double-quoted
}

// plainSafe reports whether v, written plain, is one scalar reading v, in
// a mapping as in a flow sequence.
func plainSafe(v string) bool {
	if v == "" || strings.ContainsAny(v, "\n\r\t\"'") {
		return false
	}
	for _, doc := range []string{"k: " + v, "k: [" + v + "]"} {
		var n yaml.Node
		if yaml.Unmarshal([]byte(doc), &n) != nil || len(n.Content) != 1 {
			return false
		}
		m := n.Content[0]
		if m.Kind != yaml.MappingNode || len(m.Content) != 2 {
			return false
		}
		s := m.Content[1]
		if s.Kind == yaml.SequenceNode {
			if len(s.Content) != 1 {
				return false
			}
			s = s.Content[0]
		}
		if s.Kind != yaml.ScalarNode || s.Value != v || s.Style != 0 {
			return false
		}
	}
	return true
}
