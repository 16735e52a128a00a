package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteFile writes content to a file called name in a fresh temporary
// directory, with mode set past the umask, and returns its path.
func WriteFile(t testing.TB, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}

// AssertNoSecret fails when any of the texts (by name) holds the secret.
func AssertNoSecret(t testing.TB, secret string, texts map[string]string) {
	t.Helper()
	for name, s := range texts {
		if strings.Contains(s, secret) {
			t.Errorf("%s holds the secret %q:\n%s", name, secret, s)
		}
	}
}
