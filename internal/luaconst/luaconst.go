// Package luaconst writes the constants that a package shares with its Lua
// scripts as a Lua file, so that both languages read one definition: board
// and sink each declare theirs in luaconsts.go, their lua/consts.lua is
// what Render makes of that file (go generate ./board, ./sink), and a test
// of each package fails when its Lua file is not current.
//
// The package imports the standard library only.
package luaconst

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"regexp"
	"strings"
	"unicode"
)

// maxExact is the largest integer magnitude a Lua number (a double) holds
// exactly: 2^53 − 1.
const maxExact = 1<<53 - 1

// Render returns the Lua file for the Go source src, named name in the
// file's first line. Every constant declared at the top level of src
// becomes a Lua local of the same value, in the order declared, named in
// upper snake case (kindPeriod is KIND_PERIOD), with its comments: a
// group's doc comment above the group, a constant's doc comment above it
// and its line comment after it, each constant named there by its Lua
// name.
//
// src must import nothing. A constant may be a string or an integer within
// ±(2^53 − 1), written as any constant expression; anything else, or two
// constants with one Lua name, is an error.
func Render(name string, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("luaconst: %w", err)
	}
	if len(f.Imports) > 0 {
		return nil, fmt.Errorf("luaconst: %s imports packages; it must declare its constants alone", name)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{}).Check(f.Name.Name, fset, []*ast.File{f}, info); err != nil {
		return nil, fmt.Errorf("luaconst: %w", err)
	}
	// Lua names, and the comments' words that are Go names of constants.
	seen, names := map[string]string{}, map[string]string{}
	for id, obj := range info.Defs {
		if _, ok := obj.(*types.Const); ok && id.Name != "_" && obj.Parent() == obj.Pkg().Scope() {
			lua := upperSnake(id.Name)
			if other, dup := seen[lua]; dup {
				a, b := min(other, id.Name), max(other, id.Name)
				return nil, fmt.Errorf("luaconst: %s and %s are both %s in Lua", a, b, lua)
			}
			seen[lua], names[id.Name] = id.Name, lua
		}
	}
	rename := func(text string) string {
		return goName.ReplaceAllStringFunc(text, func(w string) string {
			if lua, ok := names[w]; ok {
				return lua
			}
			return w
		})
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "-- Code generated from %s by go generate; DO NOT EDIT.\n", name)
	out.WriteString("--\n-- Each constant of " + name + " as a local named in upper snake case; a\n" +
		"-- script includes this file first (\"--! include consts.lua\").\n")
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		out.WriteByte('\n')
		comment(&out, g.Doc, "", rename)
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			comment(&out, vs.Doc, "", rename)
			for _, id := range vs.Names {
				if id.Name == "_" {
					continue
				}
				lua := names[id.Name]
				val, err := luaValue(info.Defs[id].(*types.Const).Val())
				if err != nil {
					return nil, fmt.Errorf("luaconst: %s: %s: %w", fset.Position(id.Pos()), id.Name, err)
				}
				fmt.Fprintf(&out, "local %s = %s", lua, val)
				comment(&out, vs.Comment, " ", rename)
				if vs.Comment == nil {
					out.WriteByte('\n')
				}
			}
		}
	}
	return out.Bytes(), nil
}

// goName matches a word that may be a Go identifier.
var goName = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// comment writes the lines of c as Lua comments, the first after lead,
// with rename applied to each.
func comment(out *bytes.Buffer, c *ast.CommentGroup, lead string, rename func(string) string) {
	if c == nil {
		return
	}
	for i, l := range strings.Split(strings.TrimRight(rename(c.Text()), "\n"), "\n") {
		if i == 0 {
			out.WriteString(lead)
		}
		out.WriteString(strings.TrimRight("-- "+l, " "))
		out.WriteByte('\n')
	}
}

// luaValue writes a constant as a Lua literal.
func luaValue(v constant.Value) (string, error) {
	switch v.Kind() {
	case constant.String:
		return luaString(constant.StringVal(v)), nil
	case constant.Int:
		x, exact := constant.Int64Val(v)
		if !exact || x > maxExact || x < -maxExact {
			return "", fmt.Errorf("%s is not exact in a Lua number", v)
		}
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("a %s constant has no Lua form here (strings and integers only)", v.Kind())
}

// luaString quotes s for Lua 5.1: single quotes, and a decimal escape for
// every byte that is not printable ASCII, a quote or a backslash.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '\'' || c == '\\' {
			fmt.Fprintf(&b, "\\%03d", c)
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('\'')
	return b.String()
}

// upperSnake turns a Go name into its Lua constant's: a word starts at an
// upper-case letter after a lower-case letter or digit, and at the last
// upper-case letter of a run followed by a lower-case one (maxRanges is
// MAX_RANGES, readTTLValue READ_TTL_VALUE).
func upperSnake(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) {
			prev := r[i-1]
			next := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || unicode.IsUpper(prev) && next {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToUpper(c))
	}
	return b.String()
}
