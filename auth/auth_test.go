package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTokensValidAndRotate(t *testing.T) {
	p := writeFile(t, "# operators\n  alpha  \n\nbeta\n")
	tk, err := LoadTokens(p)
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]bool{"alpha": true, "beta": true, "gamma": false, "": false, "alph": false, "# operators": false} {
		if got := tk.Valid(tok); got != want {
			t.Errorf("Valid(%q) = %v, want %v", tok, got, want)
		}
	}
	// Rotation: the new file replaces the set on Reload.
	if err := os.WriteFile(p, []byte("beta\ngamma\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := tk.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if c != (Change{Before: 2, After: 2, Added: 1, Removed: 1}) {
		t.Errorf("change %+v, want 2 → 2, 1 added, 1 removed", c)
	}
	if tk.Valid("alpha") || !tk.Valid("beta") || !tk.Valid("gamma") || tk.Len() != 2 {
		t.Errorf("after reload: alpha %v beta %v gamma %v len %d", tk.Valid("alpha"), tk.Valid("beta"), tk.Valid("gamma"), tk.Len())
	}
	// A reload that fails keeps the tokens in force.
	if err := os.WriteFile(p, []byte("\n# none\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Reload(); !errors.Is(err, ErrNoTokens) {
		t.Fatalf("Reload of an empty file: %v, want ErrNoTokens", err)
	}
	if !tk.Valid("gamma") {
		t.Error("a failed reload dropped the tokens in force")
	}
}

func TestLoadTokensErrorsNameNoSecret(t *testing.T) {
	if _, err := LoadTokens(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
	p := writeFile(t, "   \n")
	_, err := LoadTokens(p)
	if !errors.Is(err, ErrNoTokens) || !strings.Contains(err.Error(), p) {
		t.Fatalf("empty file: %v", err)
	}
}

func TestBearer(t *testing.T) {
	tk, err := LoadTokens(writeFile(t, "s3cret\n"))
	if err != nil {
		t.Fatal(err)
	}
	for h, want := range map[string]bool{
		"Bearer s3cret": true, "bearer s3cret": true, "BEARER  s3cret ": true,
		"Bearer": false, "Basic s3cret": false, "s3cret": false, "": false, "Bearer s3cre": false,
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		if got := tk.Allow(r); got != want {
			t.Errorf("Allow(%q) = %v, want %v", h, got, want)
		}
	}
	var zero Tokens
	if zero.Valid("anything") {
		t.Error("the zero Tokens accepted a token")
	}
}

func TestHMAC(t *testing.T) {
	body := []byte(`{"room_id":"r-1"}`)
	old, cur := []byte("old-secret"), []byte("new-secret")
	sig := SignHMAC(cur, body)
	secrets := [][]byte{old, cur}
	for s, want := range map[string]bool{
		sig: true, "sha256=" + sig: true, strings.ToUpper(sig): true,
		SignHMAC([]byte("other"), body): false, sig[:10]: false, "zz": false, "": false,
	} {
		if got := VerifyHMAC(secrets, body, s); got != want {
			t.Errorf("VerifyHMAC(%q) = %v, want %v", s, got, want)
		}
	}
	if VerifyHMAC(secrets, []byte(`{"room_id":"r-2"}`), sig) {
		t.Error("a signature of another body verified")
	}
}

func TestSecretsVerifyAndRotate(t *testing.T) {
	p := writeFile(t, "# signing\nold-secret\n")
	s, err := LoadSecrets(p)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"room_id":"r-1"}`)
	if !s.Verify(body, SignHMAC([]byte("old-secret"), body)) || s.Verify(body, SignHMAC([]byte("new-secret"), body)) {
		t.Fatal("before rotation: only old-secret verifies")
	}
	if err := os.WriteFile(p, []byte("new-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if s.Verify(body, SignHMAC([]byte("old-secret"), body)) || !s.Verify(body, SignHMAC([]byte("new-secret"), body)) {
		t.Fatal("after rotation: only new-secret verifies")
	}
	if err := os.WriteFile(p, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reload(); !errors.Is(err, ErrNoTokens) || strings.Contains(err.Error(), "new-secret") {
		t.Fatalf("Reload of an empty file: %v", err)
	}
	if !s.Verify(body, SignHMAC([]byte("new-secret"), body)) {
		t.Error("a failed reload dropped the secrets in force")
	}
	var zero Secrets
	if zero.Verify(body, SignHMAC(nil, body)) {
		t.Error("the zero Secrets verified a signature")
	}
}

// TestTimestampedSignature: the signature binds the timestamp, the method,
// the path and the body; any one changed fails it.
func TestTimestampedSignature(t *testing.T) {
	secrets := [][]byte{[]byte("old-secret-0123456789"), []byte("new-secret-0123456789")}
	body := []byte(`{"room_id":"r-1"}`)
	sig := SignRequest(secrets[1], 1700000000, "POST", "/v1/callbacks/rtc", body)
	if !VerifyRequest(secrets, "1700000000", "POST", "/v1/callbacks/rtc", body, sig) ||
		!VerifyRequest(secrets, "1700000000", "POST", "/v1/callbacks/rtc", body, "sha256="+sig) {
		t.Fatal("the signature of the request did not verify")
	}
	for name, ok := range map[string]bool{
		"timestamp": VerifyRequest(secrets, "1700000001", "POST", "/v1/callbacks/rtc", body, sig),
		"method":    VerifyRequest(secrets, "1700000000", "PUT", "/v1/callbacks/rtc", body, sig),
		"path":      VerifyRequest(secrets, "1700000000", "POST", "/v1/callbacks/client", body, sig),
		"body":      VerifyRequest(secrets, "1700000000", "POST", "/v1/callbacks/rtc", []byte(`{"room_id":"r-2"}`), sig),
		"secret":    VerifyRequest([][]byte{[]byte("other-secret-0123456789")}, "1700000000", "POST", "/v1/callbacks/rtc", body, sig),
		"body-only": VerifyHMAC(secrets, body, sig),
	} {
		if ok {
			t.Errorf("another %s verified", name)
		}
	}
	// A body-only signature is not a timestamped one either.
	if VerifyRequest(secrets, "1700000000", "POST", "/v1/callbacks/rtc", body, SignHMAC(secrets[0], body)) {
		t.Error("a body-only signature verified as timestamped")
	}
}

// TestMinBytes: with MinBytes a short token or secret is refused, at load
// and at reload (which keeps the set in force); the error names the file
// and the line, never the value.
func TestMinBytes(t *testing.T) {
	p := writeFile(t, "# ops\n0123456789abcdef\nshort-one\n")
	_, err := LoadTokens(p, MinBytes(MinLength))
	if !errors.Is(err, ErrShort) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line 3") || strings.Contains(err.Error(), "short-one") {
		t.Fatalf("short token: %v", err)
	}
	if _, err := LoadSecrets(p, MinBytes(MinLength)); !errors.Is(err, ErrShort) {
		t.Fatalf("short secret: %v", err)
	}
	if _, err := LoadTokens(p); err != nil {
		t.Fatalf("without MinBytes: %v", err)
	}
	if err := os.WriteFile(p, []byte("0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tk, err := LoadTokens(p, MinBytes(MinLength))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("tiny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Reload(); !errors.Is(err, ErrShort) || !tk.Valid("0123456789abcdef") {
		t.Fatalf("reload of a short token: %v, the old set kept: %v", err, tk.Valid("0123456789abcdef"))
	}
}

// TestSecretsReuseKeyedStates: a Secrets keeps its keyed HMAC states from
// one verification to the next (and across goroutines); each verdict must
// still depend on its own request alone, whatever came before it (a
// failed signature, a longer body, the other mode), and on the secrets in
// force. Each signature is made here with crypto/hmac, so its verdict is
// known by construction.
func TestSecretsReuseKeyedStates(t *testing.T) {
	p := writeFile(t, "old-secret-0123456789\nnew-secret-0123456789\n")
	s, err := LoadSecrets(p)
	if err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{[]byte("old-secret-0123456789"), []byte("new-secret-0123456789"), []byte("other-secret-0123456789")}
	sign := func(key []byte, msg ...string) string {
		m := hmac.New(sha256.New, key)
		for _, p := range msg {
			m.Write([]byte(p))
		}
		return hex.EncodeToString(m.Sum(nil))
	}
	run := func(seed uint64, inForce int) { // keys[:inForce] verify
		rng := rand.New(rand.NewPCG(seed, 7))
		for range 500 {
			body := make([]byte, rng.IntN(300))
			for i := range body {
				body[i] = byte(rng.IntN(256))
			}
			other := append(append([]byte(nil), body...), 'x')
			k := rng.IntN(len(keys))
			ts := strconv.Itoa(1700000000 + rng.IntN(1000))
			signedBody := body
			if rng.IntN(4) == 0 {
				signedBody = other // a signature of another body
			}
			want := k < inForce && len(signedBody) == len(body)
			sig := sign(keys[k], ts, ".POST./v1/callbacks/rtc.", string(signedBody))
			if rng.IntN(2) == 0 {
				sig = "sha256=" + strings.ToUpper(sig)
			}
			if got := s.VerifyRequest(ts, "POST", "/v1/callbacks/rtc", body, sig); got != want {
				t.Errorf("timestamped: key %d, body of %d bytes, another body %v: %v, want %v", k, len(body), len(signedBody) != len(body), got, want)
			}
			if got := s.Verify(body, sign(keys[k], string(signedBody))); got != want {
				t.Errorf("body only: key %d, body of %d bytes, another body %v: %v, want %v", k, len(body), len(signedBody) != len(body), got, want)
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); run(uint64(g), 2) }()
	}
	wg.Wait()
	// Rotation: the states keyed with the old set are not used again.
	if err := os.WriteFile(p, []byte("new-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	keys[0], keys[1] = keys[1], keys[0] // keys[0] is the one in force
	run(9, 1)
}
