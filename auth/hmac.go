package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// The two signatures a callback sender may make, both hex HMAC-SHA256 (an
// optional "sha256=" prefix, as GitHub-style webhooks send it, is
// accepted when verifying):
//
//	timestamped (recommended)  HMAC(secret, timestamp "." method "." path "." body)
//	body only                  HMAC(secret, body)
//
// timestamp is the decimal Unix time in seconds exactly as the sender puts
// it in its timestamp header, method the HTTP method in upper case
// ("POST"), path the request path ("/v1/callbacks/rtc", no query). A
// timestamped signature is bound to its route and, with the receiver's
// check of the timestamp, to a window of time; a body-only signature is
// bound to neither (see docs/DESIGN.md §11).

// mac returns the HMAC-SHA256 under secret of parts joined by ".".
func mac(secret []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, secret)
	for i, p := range parts {
		if i > 0 {
			m.Write([]byte{'.'})
		}
		m.Write(p)
	}
	return m.Sum(nil)
}

// decodeSignature returns the bytes of a hex signature, or nil when it is
// not one of the right length.
func decodeSignature(signature string) []byte {
	sig, err := hex.DecodeString(strings.TrimPrefix(strings.TrimSpace(signature), "sha256="))
	if err != nil || len(sig) != sha256.Size {
		return nil
	}
	return sig
}

// verify reports whether sig is the MAC of parts under one of secrets. It
// computes and compares (in constant time) for every secret, so the time
// taken tells nothing about which secret matched.
func verify(secrets [][]byte, signature string, parts ...[]byte) bool {
	sig := decodeSignature(signature)
	if sig == nil {
		return false
	}
	ok := false
	for _, s := range secrets {
		if hmac.Equal(mac(s, parts...), sig) {
			ok = true
		}
	}
	return ok
}

// VerifyHMAC reports whether signature is the body-only HMAC-SHA256 of
// body under one of secrets. It compares in constant time.
func VerifyHMAC(secrets [][]byte, body []byte, signature string) bool {
	return verify(secrets, signature, body)
}

// SignHMAC returns the body-only signature of body under secret, in hex.
func SignHMAC(secret, body []byte) string { return hex.EncodeToString(mac(secret, body)) }

// SignRequest returns the timestamped signature of a request under secret,
// in hex: what a sender puts in the signature header, with ts (Unix
// seconds) in the timestamp header.
func SignRequest(secret []byte, ts int64, method, path string, body []byte) string {
	return hex.EncodeToString(mac(secret, strconv.AppendInt(nil, ts, 10), []byte(method), []byte(path), body))
}

// VerifyRequest reports whether signature is the timestamped signature of
// a request under one of secrets; timestamp is the header's text as sent.
// It does not judge the timestamp's age: the caller does, before reading
// the body. It compares in constant time.
func VerifyRequest(secrets [][]byte, timestamp, method, path string, body []byte, signature string) bool {
	return verify(secrets, signature, []byte(timestamp), []byte(method), []byte(path), body)
}
