package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// VerifyHMAC reports whether signature is the HMAC-SHA256 of body under
// one of secrets, in hex (an optional "sha256=" prefix, as GitHub-style
// webhooks send it, is accepted). It compares in constant time.
func VerifyHMAC(secrets [][]byte, body []byte, signature string) bool {
	sig, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(signature), "sha256="))
	if err != nil || len(sig) != sha256.Size {
		return false
	}
	ok := false
	for _, s := range secrets {
		m := hmac.New(sha256.New, s)
		m.Write(body)
		if hmac.Equal(m.Sum(nil), sig) {
			ok = true
		}
	}
	return ok
}

// SignHMAC returns the hex HMAC-SHA256 of body under secret, as a
// producer puts it in the signature header.
func SignHMAC(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}
