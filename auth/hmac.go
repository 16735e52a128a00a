package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
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

// macs are the keyed HMAC-SHA256 states of a set of secrets, one per
// secret, with the scratch space of one verification. Keying a state
// (hmac.New) costs more than the MAC of a small body, so a Secrets keeps
// its macs in a pool and a verification only resets them. A macs is for
// one goroutine at a time.
type macs struct {
	hs  []hash.Hash
	msg []byte // a timestamped signature's timestamp "." method "." path "."
	sum [sha256.Size]byte
}

func newMacs(secrets [][]byte) *macs {
	m := &macs{hs: make([]hash.Hash, len(secrets))}
	for i, s := range secrets {
		m.hs[i] = hmac.New(sha256.New, s)
	}
	return m
}

// verify reports whether signature is the MAC of prefix followed by body
// under one of the secrets. It computes and compares (in constant time)
// for every secret, so the time taken tells nothing about which secret
// matched.
func (m *macs) verify(signature string, prefix, body []byte) bool {
	var sig [sha256.Size]byte
	if !decodeSignature(&sig, signature) {
		return false
	}
	ok := false
	for _, h := range m.hs {
		h.Reset()
		h.Write(prefix)
		h.Write(body)
		if hmac.Equal(h.Sum(m.sum[:0]), sig[:]) {
			ok = true
		}
	}
	return ok
}

// verifyRequest is VerifyRequest under m's secrets.
func (m *macs) verifyRequest(timestamp, method, path string, body []byte, signature string) bool {
	m.msg = append(m.msg[:0], timestamp...)
	m.msg = append(m.msg, '.')
	m.msg = append(m.msg, method...)
	m.msg = append(m.msg, '.')
	m.msg = append(m.msg, path...)
	m.msg = append(m.msg, '.')
	return m.verify(signature, m.msg, body)
}

// decodeSignature decodes a hex signature (upper or lower case, with an
// optional "sha256=" prefix and surrounding white space) into sig, and
// reports false when it is not one of the right length.
func decodeSignature(sig *[sha256.Size]byte, signature string) bool {
	s := strings.TrimPrefix(strings.TrimSpace(signature), "sha256=")
	if len(s) != 2*len(sig) {
		return false
	}
	for i := range sig {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		sig[i] = hi<<4 | lo
	}
	return true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// VerifyHMAC reports whether signature is the body-only HMAC-SHA256 of
// body under one of secrets. It compares in constant time.
func VerifyHMAC(secrets [][]byte, body []byte, signature string) bool {
	return newMacs(secrets).verify(signature, nil, body)
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
	return newMacs(secrets).verifyRequest(timestamp, method, path, body, signature)
}
