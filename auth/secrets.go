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
	path string

	mu      sync.RWMutex
	secrets [][]byte
}

// LoadSecrets reads the secrets of path. A file without one is
// ErrNoTokens, for the same reason as LoadTokens.
func LoadSecrets(path string) (*Secrets, error) {
	s := &Secrets{path: path}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the file again (for example on SIGHUP). On an error the
// secrets in force stay in force. Errors name the file, never a secret.
func (s *Secrets) Reload() error {
	secrets, err := readLines(s.path, "secret")
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.secrets = secrets
	s.mu.Unlock()
	return nil
}

// Verify reports whether signature is the HMAC-SHA256 of body under one
// of the secrets in force (see VerifyHMAC). The zero Secrets verifies
// nothing.
func (s *Secrets) Verify(body []byte, signature string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.secrets) > 0 && VerifyHMAC(s.secrets, body, signature)
}
