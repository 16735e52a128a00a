package gateway

import (
	"net/http"

	"github.com/rostrumhq/rostrum/auth"
)

// A request is authenticated by either credential the gateway has: a
// bearer token, or an HMAC-SHA256 signature of its body. The Config's
// credentials are optional; a nil one accepts nothing.

func allowBearer(t *auth.Tokens, r *http.Request) bool { return t != nil && t.Allow(r) }

func verifySignature(s *auth.Secrets, body []byte, signature string) bool {
	return s != nil && s.Verify(body, signature)
}
