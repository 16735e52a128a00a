package auth

import (
	"sync"
)

// Secrets is a set of HMAC secrets read from a file: one per line, blank
// lines and lines starting with '#' ignored, surrounding white space
// trimmed. Several lines let a signing secret be rotated: the senders
// switch from the old to the new one while both verify. It is safe for
// concurrent use, and Reload may run while requests are being checked.
type Secrets struct {
	file fileSpec

	mu      sync.RWMutex
	secrets [][]byte
	macs    *sync.Pool // of *macs keyed with secrets; a new pool with each set
}

// LoadSecrets reads the secrets of path. A file without one is
// ErrNoTokens, for the same reason as LoadTokens; with MinBytes, a secret
// shorter than that is ErrShort.
func LoadSecrets(path string, opts ...Option) (*Secrets, error) {
	s := &Secrets{file: newFileSpec(path, "secret", opts)}
	if _, err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the file again (for example on SIGHUP) and says how the set
// changed. On an error the secrets in force stay in force. Errors name the
// file, never a secret.
func (s *Secrets) Reload() (Change, error) {
	secrets, err := s.file.read()
	if err != nil {
		return Change{}, err
	}
	s.mu.Lock()
	c := diff(s.secrets, secrets)
	s.secrets = secrets
	s.macs = &sync.Pool{New: func() any { return newMacs(secrets) }}
	s.mu.Unlock()
	return c, nil
}

// Len is the number of secrets in force.
func (s *Secrets) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.secrets)
}

// Verify reports whether signature is the body-only signature of body
// under one of the secrets in force (see VerifyHMAC). The zero Secrets
// verifies nothing.
func (s *Secrets) Verify(body []byte, signature string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.secrets) == 0 {
		return false
	}
	m := s.macs.Get().(*macs)
	defer s.macs.Put(m)
	return m.verify(signature, nil, body)
}

// VerifyRequest reports whether signature is the timestamped signature of
// a request under one of the secrets in force (see VerifyRequest). The
// zero Secrets verifies nothing.
func (s *Secrets) VerifyRequest(timestamp, method, path string, body []byte, signature string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(s.secrets) == 0 {
		return false
	}
	m := s.macs.Get().(*macs)
	defer s.macs.Put(m)
	return m.verifyRequest(timestamp, method, path, body, signature)
}
