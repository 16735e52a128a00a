package auth

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
)

// MinLength is the least length, in bytes, of a token or secret that
// rostrum's commands accept (docs/DESIGN.md §11, §14): 16 bytes of a
// random token are more guesses than anyone can try.
const MinLength = 16

// ErrShort is returned by the loaders and Reload, with MinBytes, for a
// file that holds a token or secret shorter than the minimum. The error
// names the file and the line, never the value.
var ErrShort = errors.New("too short")

// Option changes how a credential file is read.
type Option func(*fileSpec)

// MinBytes refuses a file in which a token or secret is shorter than n
// bytes (ErrShort). Without it any length is accepted.
func MinBytes(n int) Option { return func(f *fileSpec) { f.minBytes = n } }

// fileSpec is a credential file: where it is, what it holds (for errors)
// and the rules its lines must meet.
type fileSpec struct {
	path, what string
	minBytes   int
}

func newFileSpec(path, what string, opts []Option) fileSpec {
	f := fileSpec{path: path, what: what}
	for _, o := range opts {
		o(&f)
	}
	return f
}

// read returns the lines of the file: blank lines and lines starting with
// '#' dropped, surrounding white space trimmed. A file with no line left
// is ErrNoTokens, a line shorter than minBytes ErrShort. Errors name the
// file (and what it holds), never a line of it.
func (f fileSpec) read() ([][]byte, error) {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("auth: read %s file: %w", f.what, err)
	}
	var lines [][]byte
	for n, l := range bytes.Split(b, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) == 0 || l[0] == '#' {
			continue
		}
		if len(l) < f.minBytes {
			return nil, fmt.Errorf("auth: %s file %s, line %d: the %s is %w: %d bytes, at least %d needed", f.what, f.path, n+1, f.what, ErrShort, len(l), f.minBytes)
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("auth: %s file %s: %w", f.what, f.path, ErrNoTokens)
	}
	return lines, nil
}

// Change says how a Reload changed a set, in counts only.
type Change struct {
	Before, After  int // entries in force before and after
	Added, Removed int // entries new in the file, and gone from it
}

// change counts the entries of next not in prev, and of prev not in next.
func change[K comparable](prev, next []K) Change {
	in := func(set []K) map[K]bool {
		m := make(map[K]bool, len(set))
		for _, k := range set {
			m[k] = true
		}
		return m
	}
	p, n := in(prev), in(next)
	c := Change{Before: len(prev), After: len(next)}
	for k := range n {
		if !p[k] {
			c.Added++
		}
	}
	for k := range p {
		if !n[k] {
			c.Removed++
		}
	}
	return c
}

// diff is change for secrets, compared by their SHA-256.
func diff(prev, next [][]byte) Change {
	h := func(set [][]byte) [][sha256.Size]byte {
		out := make([][sha256.Size]byte, len(set))
		for i, s := range set {
			out[i] = sha256.Sum256(s)
		}
		return out
	}
	return change(h(prev), h(next))
}
