package gateway

import (
	"net/http"
	"strconv"
	"time"
)

// A request is authenticated by either credential the gateway has: a
// bearer token, or an HMAC-SHA256 signature (timestamped, or of the body
// only, by Config.SignatureMode). Everything that the headers alone can
// decide is decided before the request takes an in-flight slot or a byte
// of its body is read: a bearer token, a signature with no secret to check
// it against, a missing or stale timestamp. Only the signature itself
// needs the body. The Config's credentials are optional; a nil one
// accepts nothing.

// verdict is what the headers say of a request's credentials.
type verdict int

const (
	refused verdict = iota // 401 now
	allowed                // open gateway, or a valid bearer token
	signed                 // a signature to check once the body is in
)

// checkHeaders judges the credentials in r's headers at now; for a refused
// request it says why, in words for the answer (never a credential).
func (g *Gateway) checkHeaders(r *http.Request, now time.Time) (verdict, string) {
	if g.open || (g.cfg.Tokens != nil && g.cfg.Tokens.Allow(r)) {
		return allowed, ""
	}
	if header(r, g.sigKey) == "" {
		return refused, "missing or invalid credential: send Authorization: Bearer <token> or a signature in " + g.cfg.SignatureHeader
	}
	if g.cfg.Secrets == nil {
		return refused, "a signature in " + g.cfg.SignatureHeader + ", but this gateway has no signing secret (--gateway-hmac-secret-file): send Authorization: Bearer <token>"
	}
	if g.cfg.SignatureMode == SignatureTimestamped {
		ts := header(r, g.tsKey)
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			return refused, "a timestamped signature needs the Unix time in seconds in " + g.cfg.TimestampHeader
		}
		if d := now.Sub(time.Unix(sec, 0)); d > g.cfg.MaxSkew || d < -g.cfg.MaxSkew {
			return refused, "the time in " + g.cfg.TimestampHeader + " is more than " + g.cfg.MaxSkew.String() + " from the gateway's clock (--gateway-signature-max-skew): sign each request when it is sent"
		}
	}
	return signed, ""
}

// verifySignature checks the signature of a signed request against its
// body, in the configured mode.
func (g *Gateway) verifySignature(r *http.Request, body []byte) bool {
	sig := header(r, g.sigKey)
	if g.cfg.SignatureMode == SignatureBody {
		return g.cfg.Secrets.Verify(body, sig)
	}
	return g.cfg.Secrets.VerifyRequest(header(r, g.tsKey), r.Method, r.URL.Path, body, sig)
}

// header is r.Header.Get(key) for a key already canonical, which Get
// would make canonical again, in a new string, on every call for a key
// such as "traceparent" or a configured "x-signature".
func header(r *http.Request, key string) string {
	if vs := r.Header[key]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}
