package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"sync"
)

// ErrNoTokens is returned by LoadTokens and Reload for a file that holds
// no token: a surface protected by an empty set would refuse everyone,
// which is never what an operator meant.
var ErrNoTokens = errors.New("no token in file")

// Tokens is a set of bearer tokens read from a file. The zero value holds
// no token and accepts nothing.
type Tokens struct {
	file fileSpec

	mu     sync.RWMutex
	hashes [][sha256.Size]byte // SHA-256 of each token: fixed length, so one compare costs the same for every token
}

// LoadTokens reads the tokens of path: one per line, blank lines and lines
// starting with '#' ignored, surrounding white space trimmed. With
// MinBytes, a token shorter than that is ErrShort.
func LoadTokens(path string, opts ...Option) (*Tokens, error) {
	t := &Tokens{file: newFileSpec(path, "token", opts)}
	if _, err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload reads the file again (for example on SIGHUP) and says how the set
// changed. On an error the tokens in force stay in force.
func (t *Tokens) Reload() (Change, error) {
	lines, err := t.file.read()
	if err != nil {
		return Change{}, err
	}
	hashes := make([][sha256.Size]byte, len(lines))
	for i, l := range lines {
		hashes[i] = sha256.Sum256(l)
	}
	t.mu.Lock()
	c := change(t.hashes, hashes)
	t.hashes = hashes
	t.mu.Unlock()
	return c, nil
}

// Len is the number of tokens in force.
func (t *Tokens) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.hashes)
}

// Valid reports whether token is one of the set. It compares against every
// token, in constant time each, so the time taken tells nothing about which
// token or how much of it matched.
func (t *Tokens) Valid(token string) bool {
	if token == "" {
		return false
	}
	h := sha256.Sum256([]byte(token))
	t.mu.RLock()
	defer t.mu.RUnlock()
	ok := 0
	for i := range t.hashes {
		ok |= subtle.ConstantTimeCompare(h[:], t.hashes[i][:])
	}
	return ok == 1
}

// Bearer returns the token of an "Authorization: Bearer <token>" header,
// or "" when the request carries none.
func Bearer(r *http.Request) string {
	const prefix = "bearer "
	h := r.Header.Get("Authorization")
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return ""
	}
	return strings.TrimSpace(h[len(prefix):])
}

// Allow reports whether r carries a valid bearer token.
func (t *Tokens) Allow(r *http.Request) bool { return t.Valid(Bearer(r)) }
