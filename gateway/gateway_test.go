package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/gateway"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/route"
)

// rig is a gateway on an in-process Kafka with routes prod=^p-, gray=^g-
// and, unless noDefault, the default test.
type rig struct {
	kafka *testenv.Kafka
	srv   *httptest.Server
	gw    *gateway.Gateway
}

type rigOpt func(*gateway.Config)

func allTopics(envs ...string) []string {
	var out []string
	for _, e := range envs {
		for _, s := range gateway.Sources {
			out = append(out, gateway.Topic("", e, s))
		}
	}
	return out
}

func newRig(t *testing.T, defaultEnv string, opts ...rigOpt) *rig {
	t.Helper()
	k := testenv.StartKafka(t, testenv.WithTopics(3, allTopics("prod", "gray", "test")...))
	rules, err := route.Parse("prod=^p-,gray=^g-")
	if err != nil {
		t.Fatal(err)
	}
	routes, err := route.New(rules, defaultEnv)
	if err != nil {
		t.Fatal(err)
	}
	cl := k.Client(gateway.ProducerOpts(5*time.Second, gateway.DefaultMaxBodyBytes)...)
	cfg := gateway.Config{Client: cl, Routes: routes, Insecure: true, Logger: zaptest.NewLogger(t), MaxBodyBytes: 4096}
	for _, o := range opts {
		o(&cfg)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return &rig{kafka: k, srv: srv, gw: gw}
}

type answer struct {
	code   int
	header http.Header
	body   map[string]any
	raw    string
}

// get returns the body of GET path.
func (r *rig) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := r.srv.Client().Get(r.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (r *rig) post(t *testing.T, source, contentType, body string, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.srv.URL+"/v1/callbacks/"+source, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{code: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, raw)
	}
	return a
}

// wantError checks an error answer: its code, a problem whose detail says
// errHas, with the request id, and the X-Request-Id header.
func wantError(t *testing.T, a answer, code int, errHas string) {
	t.Helper()
	if a.code != code {
		t.Fatalf("code %d, want %d (body %s)", a.code, code, a.raw)
	}
	msg, _ := a.body["detail"].(string)
	if !strings.Contains(msg, errHas) {
		t.Errorf("detail %q does not contain %q", msg, errHas)
	}
	id, _ := a.body["request_id"].(string)
	if id == "" || a.header.Get("X-Request-Id") != id {
		t.Errorf("request_id %q, X-Request-Id %q", id, a.header.Get("X-Request-Id"))
	}
	if a.header.Get("Content-Type") != "application/problem+json" || a.body["status"] != float64(code) ||
		a.body["code"] == nil || a.body["type"] == nil || a.body["error"] != nil {
		t.Errorf("not an RFC 9457 problem with the request id: %s (Content-Type %q)", a.raw, a.header.Get("Content-Type"))
	}
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestGatewayPassThroughByteExact(t *testing.T) {
	r := newRig(t, "test")
	// Odd spacing, escapes, fields and a type rostrum does not rank on:
	// all pass unchanged.
	obj := `{ "room_id" : "p-1","user_id":"u\u002d1", "type":"recording_started","value":{"a":[1,2.50,"x"]},"ts":1763700000123 , "extra":null}`
	before := time.Now().UnixMilli()
	a := r.post(t, "rtc", "application/json; charset=utf-8", " \n"+obj+"\n", "X-Request-Id", "req-42")
	if a.code != http.StatusAccepted || a.body["accepted"] != 1.0 || a.body["records"] != 1.0 || a.body["request_id"] != "req-42" {
		t.Fatalf("answer %d %s", a.code, a.raw)
	}
	recs := r.kafka.ReadAll("prod.callbacks.rtc")
	if len(recs) != 1 {
		t.Fatalf("%d records in prod.callbacks.rtc, want 1", len(recs))
	}
	rec := recs[0]
	if string(rec.Value) != obj || string(rec.Key) != "p-1" {
		t.Errorf("record key %q value %q\nwant key p-1 value %q", rec.Key, rec.Value, obj)
	}
	if header(rec, gateway.HeaderSource) != "rtc" || header(rec, gateway.HeaderRequestID) != "req-42" {
		t.Errorf("headers %v", rec.Headers)
	}
	at, err := strconv.ParseInt(header(rec, gateway.HeaderReceivedAt), 10, 64)
	if err != nil || at < before || at > time.Now().UnixMilli() {
		t.Errorf("rostrum-received-at %q, want a Unix ms time of the request", header(rec, gateway.HeaderReceivedAt))
	}
}

func TestGatewayArraySplitByRoomKeepsOrder(t *testing.T) {
	r := newRig(t, "test")
	o := []string{
		`{"room_id":"p-1","user_id":"a","type":"join","ts":1}`,
		`{"room_id":"g-9","user_id":"b","type":"join","ts":2}`,
		`{"room_id":"p-1","user_id":"c","type":"volume","value":3,"ts":3}`,
		`{"room_id":"p-2","user_id":"d","type":"join","ts":4}`,
		`{"room_id":"p-1", "user_id":"a","type":"leave","ts":5}`,
		`{"room_id":"x-5","user_id":"e","type":"join","ts":6}`,
	}
	body := "[" + o[0] + ",\n " + o[1] + "," + o[2] + " ," + o[3] + "," + o[4] + "," + o[5] + "]"
	a := r.post(t, "client", "application/json", body)
	if a.code != http.StatusAccepted || a.body["accepted"] != 6.0 || a.body["records"] != 4.0 {
		t.Fatalf("answer %d %s", a.code, a.raw)
	}
	got := map[string]string{}
	for _, topic := range []string{"prod.callbacks.client", "gray.callbacks.client", "test.callbacks.client"} {
		for _, rec := range r.kafka.ReadAll(topic) {
			got[topic+" "+string(rec.Key)] = string(rec.Value)
		}
	}
	want := map[string]string{
		"prod.callbacks.client p-1": "[" + o[0] + "," + o[2] + "," + o[4] + "]",
		"gray.callbacks.client g-9": "[" + o[1] + "]",
		"prod.callbacks.client p-2": "[" + o[3] + "]",
		"test.callbacks.client x-5": "[" + o[5] + "]",
	}
	if len(got) != len(want) {
		t.Errorf("records %v\nwant %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

func TestGatewayRoutingRulesAndDefault(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		r := newRig(t, "test")
		for room, topic := range map[string]string{"p-7": "prod.callbacks.signal", "g-7": "gray.callbacks.signal", "zz": "test.callbacks.signal"} {
			if a := r.post(t, "signal", "application/json", `{"room_id":"`+room+`"}`); a.code != http.StatusAccepted {
				t.Fatalf("%s: %d %s", room, a.code, a.raw)
			}
			recs := r.kafka.ReadAll(topic)
			if len(recs) != 1 || string(recs[0].Key) != room {
				t.Errorf("%s: %d records in %s", room, len(recs), topic)
			}
		}
	})
	t.Run("no default", func(t *testing.T) {
		r := newRig(t, "")
		// One routable and one unroutable room: nothing is written.
		a := r.post(t, "rtc", "application/json", `[{"room_id":"p-1"},{"room_id":"zz-1"}]`)
		wantError(t, a, http.StatusUnprocessableEntity, `"zz-1"`)
		if n := len(r.kafka.ReadAll("prod.callbacks.rtc")); n != 0 {
			t.Errorf("%d records written for a refused request", n)
		}
	})
}

func TestGatewayErrorCodes(t *testing.T) {
	r := newRig(t, "test")
	big := `{"room_id":"p-1","pad":"` + strings.Repeat("x", 5000) + `"}`
	for _, tc := range []struct {
		name, source, ctype, body string
		code                      int
		errHas                    string
	}{
		{"bad JSON", "rtc", "application/json", `{"room_id":"p-1"`, 400, "not well-formed JSON"},
		{"not an object", "rtc", "application/json", `"p-1"`, 400, "JSON object or an array"},
		{"empty array", "rtc", "application/json", `[]`, 400, "empty array"},
		{"array of non-objects", "rtc", "application/json", `[{"room_id":"p-1"},3]`, 400, "object 1: not a JSON object"},
		{"missing room_id", "rtc", "application/json", `[{"room_id":"p-1"},{"user_id":"u"}]`, 400, "object 1: room_id: required"},
		{"room_id not a string", "rtc", "application/json", `{"room_id":12}`, 400, "object 0: room_id: must be a string"},
		{"room_id bad character", "rtc", "application/json", `{"room_id":"p 1"}`, 400, "invalid character ' ' at byte 1"},
		{"room_id too long", "rtc", "application/json", `{"room_id":"p-` + strings.Repeat("1", 127) + `"}`, 400, "must be 1..128 bytes"},
		{"room_id twice", "rtc", "application/json", `{"room_id":"p-1","room_id":"g-1"}`, 400, "more than once"},
		{"unknown source", "video", "application/json", `{"room_id":"p-1"}`, 404, `unknown source "video"`},
		{"too large", "rtc", "application/json", big, 413, "--max-body-bytes"},
		{"wrong content type", "rtc", "text/plain", `{"room_id":"p-1"}`, 415, "application/json"},
		{"no content type", "rtc", "", `{"room_id":"p-1"}`, 415, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, r.post(t, tc.source, tc.ctype, tc.body), tc.code, tc.errHas)
		})
	}
	// Chunked (no Content-Length) and over the limit: 413 too.
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/v1/callbacks/rtc", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the limit: %d", resp.StatusCode)
	}
	for _, topic := range allTopics("prod", "gray", "test") {
		if n := len(r.kafka.ReadAll(topic)); n != 0 {
			t.Errorf("%s holds %d records after refused requests", topic, n)
		}
	}
}

func TestGatewayMaxInflight503(t *testing.T) {
	// One slot, held by a request whose body has not finished arriving.
	r := newRig(t, "test", func(c *gateway.Config) { c.MaxInflight = 1 })
	pr, pw := io.Pipe()
	// Closed before the rig's server (cleanups run last first): a failing
	// test must not leave the held request open, or the server's Close
	// would wait for it forever.
	t.Cleanup(func() { pw.Close() })
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/v1/callbacks/rtc", pr)
	req.Header.Set("Content-Type", "application/json")
	done := make(chan int)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	_, _ = pw.Write([]byte(`{"room_id":`))
	// Wait until the held request's handler has taken the slot (it counts
	// itself in flight before it reads the body); only then is the next
	// request the one that finds no slot.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(r.get(t, "/metrics"), "\nrostrum_gateway_inflight_requests 1\n"); {
		if time.Now().After(deadline) {
			t.Fatal("the held request never took its slot")
		}
		time.Sleep(10 * time.Millisecond)
	}
	a := r.post(t, "rtc", "application/json", `{"room_id":"p-1"}`)
	wantError(t, a, http.StatusServiceUnavailable, "--max-inflight")
	if a.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	_, _ = pw.Write([]byte(`"p-2"}`))
	pw.Close()
	if code := <-done; code != http.StatusAccepted {
		t.Errorf("held request: %d", code)
	}
}

func TestGatewayProbes(t *testing.T) {
	r := newRig(t, "test")
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200} {
		resp, err := http.Get(r.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
		if path == "/metrics" && !bytes.Contains(b, []byte("rostrum_gateway_inflight_requests")) {
			t.Errorf("/metrics lacks the gateway series")
		}
	}
	r.post(t, "rtc", "application/json", `{"room_id":"p-1"}`)
	resp, _ := http.Get(r.srv.URL + "/metrics")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range []string{
		`rostrum_gateway_requests_total{code="202",source="rtc"} 1`,
		`rostrum_gateway_records_produced_total{env="prod",source="rtc"} 1`,
		`rostrum_gateway_produced_bytes_total{env="prod",source="rtc"} 17`,
	} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("/metrics lacks %s", s)
		}
	}
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Credentials of the tests: 16 bytes or more, as the commands require.
const (
	tokOld = "tok-old-0123456789"
	tokNew = "tok-new-0123456789"
	sigOld = "sig-old-0123456789"
	sigNew = "sig-new-0123456789"
)

// signed returns the headers of a timestamped signature of body on source's
// route at ts under secret.
func signed(secret, source, body string, ts time.Time) []string {
	sec := ts.Unix()
	return []string{"X-Rostrum-Signature", auth.SignRequest([]byte(secret), sec, http.MethodPost, "/v1/callbacks/"+source, []byte(body)),
		"X-Rostrum-Timestamp", strconv.FormatInt(sec, 10)}
}

func credentialRig(t *testing.T, mode string, opts ...rigOpt) (r *rig, tokFile, secFile string, tokens *auth.Tokens, secrets *auth.Secrets) {
	t.Helper()
	tokFile = writeFile(t, "tokens", tokOld+"\n")
	secFile = writeFile(t, "secrets", sigOld+"\n")
	var err error
	if tokens, err = auth.LoadTokens(tokFile, auth.MinBytes(auth.MinLength)); err != nil {
		t.Fatal(err)
	}
	if secrets, err = auth.LoadSecrets(secFile, auth.MinBytes(auth.MinLength)); err != nil {
		t.Fatal(err)
	}
	r = newRig(t, "test", append([]rigOpt{func(c *gateway.Config) {
		c.Insecure, c.Tokens, c.Secrets, c.SignatureMode = false, tokens, secrets, mode
	}}, opts...)...)
	return r, tokFile, secFile, tokens, secrets
}

// check posts body to source with hdr and wants code; a 401 must carry no
// credential.
func (r *rig) check(t *testing.T, code int, source, body string, hdr ...string) {
	t.Helper()
	a := r.post(t, source, "application/json", body, hdr...)
	if a.code != code {
		t.Fatalf("headers %q: %d %s, want %d", hdr, a.code, a.raw, code)
	}
	if code == http.StatusUnauthorized {
		wantError(t, a, code, "")
		if strings.Contains(a.raw, "tok-") || strings.Contains(a.raw, "sig-") {
			t.Errorf("a secret in the answer: %s", a.raw)
		}
	}
}

// TestGatewayAuthBearerAndRotation: bearer tokens, and both credential
// files rotated by Reload (what SIGHUP does).
func TestGatewayAuthBearerAndRotation(t *testing.T) {
	r, tokFile, secFile, tokens, secrets := credentialRig(t, "")
	body := `{"room_id":"p-1"}`
	r.check(t, 401, "rtc", body)
	r.check(t, 401, "rtc", body, "Authorization", "Bearer wrong")
	r.check(t, 202, "rtc", body, "Authorization", "Bearer "+tokOld)
	r.check(t, 202, "rtc", body, signed(sigOld, "rtc", body, time.Now())...)

	if err := os.WriteFile(tokFile, []byte(tokNew+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secFile, []byte(sigNew+"\n"+sigOld+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.check(t, 202, "rtc", body, "Authorization", "Bearer "+tokOld) // not re-read yet
	if _, err := tokens.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Reload(); err != nil {
		t.Fatal(err)
	}
	r.check(t, 401, "rtc", body, "Authorization", "Bearer "+tokOld)
	r.check(t, 202, "rtc", body, "Authorization", "Bearer "+tokNew)
	r.check(t, 202, "rtc", body, signed(sigNew, "rtc", body, time.Now())...)
	r.check(t, 202, "rtc", body, signed(sigOld, "rtc", body, time.Now())...)
}

// TestGatewayTimestampedSignature: the recommended mode refuses a signed
// request replayed outside the window, a body signed for another route, a
// body-only signature and a missing timestamp. A replay inside the window
// is accepted (docs/DESIGN.md §11 says what that leaves to the sender).
func TestGatewayTimestampedSignature(t *testing.T) {
	r, _, _, _, _ := credentialRig(t, gateway.SignatureTimestamped, func(c *gateway.Config) {
		c.SignatureHeader, c.MaxSkew = "X-Rostrum-Signature", 2*time.Minute
	})
	body := `{"room_id":"p-1"}`
	now := time.Now()
	fresh := signed(sigOld, "rtc", body, now)
	r.check(t, 202, "rtc", body, fresh...)
	r.check(t, 202, "rtc", body, fresh...) // a replay within the window
	r.check(t, 202, "rtc", body, "X-Rostrum-Signature", "sha256="+fresh[1], "X-Rostrum-Timestamp", fresh[3])
	r.check(t, 202, "rtc", body, signed(sigOld, "rtc", body, now.Add(-90*time.Second))...)

	// The same request, captured and replayed after the window.
	r.check(t, 401, "rtc", body, signed(sigOld, "rtc", body, now.Add(-3*time.Minute))...)
	r.check(t, 401, "rtc", body, signed(sigOld, "rtc", body, now.Add(3*time.Minute))...)
	// A body signed for /v1/callbacks/client, sent to rtc.
	r.check(t, 401, "rtc", body, signed(sigOld, "client", body, now)...)
	r.check(t, 202, "client", body, signed(sigOld, "client", body, now)...)
	// Another body, the timestamp moved, the body-only form, no timestamp.
	r.check(t, 401, "rtc", `{"room_id":"p-2"}`, fresh...)
	r.check(t, 401, "rtc", body, "X-Rostrum-Signature", fresh[1], "X-Rostrum-Timestamp", strconv.FormatInt(now.Unix()+1, 10))
	r.check(t, 401, "rtc", body, "X-Rostrum-Signature", auth.SignHMAC([]byte(sigOld), []byte(body)), "X-Rostrum-Timestamp", fresh[3])
	r.check(t, 401, "rtc", body, "X-Rostrum-Signature", fresh[1])
	r.check(t, 401, "rtc", body, signed("sig-other-0123456789", "rtc", body, now)...)
	a := r.post(t, "rtc", "application/json", body, signed(sigOld, "rtc", body, now.Add(-time.Hour))...)
	wantError(t, a, 401, "--gateway-signature-max-skew")
}

// TestGatewayBodySignatureMode: the explicit body mode accepts the
// signature of the body alone, in the configured header, on any route
// (what it cannot stop), and no timestamped one.
func TestGatewayBodySignatureMode(t *testing.T) {
	r, _, _, _, _ := credentialRig(t, gateway.SignatureBody, func(c *gateway.Config) { c.SignatureHeader = "X-Vendor-Signature" })
	body := `{"room_id":"p-1"}`
	sig := auth.SignHMAC([]byte(sigOld), []byte(body))
	r.check(t, 202, "rtc", body, "X-Vendor-Signature", sig)
	r.check(t, 202, "rtc", body, "X-Vendor-Signature", "sha256="+sig)
	r.check(t, 202, "client", body, "X-Vendor-Signature", sig)
	r.check(t, 401, "rtc", body, "X-Vendor-Signature", auth.SignHMAC([]byte("sig-other-0123456789"), []byte(body)))
	r.check(t, 401, "rtc", body, "X-Rostrum-Signature", sig) // not the configured header
	ts := signed(sigOld, "rtc", body, time.Now())
	r.check(t, 401, "rtc", body, "X-Vendor-Signature", ts[1], "X-Rostrum-Timestamp", ts[3])
}

// rawRequest sends the headers of a callback POST announcing a body of
// length bytes and the first bytes of that body, and returns the open
// connection.
func rawRequest(t *testing.T, url string, length int, first string, hdr ...string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "POST /v1/callbacks/rtc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", length)
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	b.WriteString("\r\n" + first)
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	return c
}

// readStatus reads the answer on c; a guard of 20 s stands for "never".
func readStatus(t *testing.T, c net.Conn) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestGatewaySignatureWithoutSecretRefusedAtOnce: with no HMAC secret
// configured, a request carrying a signature is refused on its headers: a
// body that never arrives still gets its 401, and such requests hold no
// slot.
func TestGatewaySignatureWithoutSecretRefusedAtOnce(t *testing.T) {
	r, _, _, _, _ := credentialRig(t, "", func(c *gateway.Config) { c.Secrets, c.MaxInflight = nil, 1 })
	body := `{"room_id":"p-1"}`
	for range 2 {
		c := rawRequest(t, r.srv.URL, 100, `{"room_id":`, signed(sigOld, "rtc", body, time.Now())...)
		if code := readStatus(t, c); code != http.StatusUnauthorized {
			t.Fatalf("a signature with no secret configured: %d, want 401", code)
		}
	}
	a := r.post(t, "rtc", "application/json", body, signed(sigOld, "rtc", body, time.Now())...)
	wantError(t, a, 401, "--gateway-hmac-secret-file")
	r.check(t, 202, "rtc", body, "Authorization", "Bearer "+tokOld)
}

// TestGatewaySlowSignedBodiesHoldNoInflightSlot: signed requests whose
// bodies trickle in (their signature cannot be checked yet) do not take
// the in-flight slots, so a request with a valid bearer token is served.
func TestGatewaySlowSignedBodiesHoldNoInflightSlot(t *testing.T) {
	r, _, _, _, _ := credentialRig(t, "", func(c *gateway.Config) { c.MaxInflight = 2 })
	forged := []string{"X-Rostrum-Signature", strings.Repeat("ab", 32), "X-Rostrum-Timestamp", strconv.FormatInt(time.Now().Unix(), 10)}
	for range 2 {
		rawRequest(t, r.srv.URL, 100, `{"room_id":`, forged...)
	}
	// Both slow requests are in the handler: counted as verifying (or, if
	// they took in-flight slots, as in flight).
	for deadline := time.Now().Add(time.Minute); ; {
		m := r.get(t, "/metrics")
		if strings.Contains(m, "\nrostrum_gateway_verifying_requests 2\n") || strings.Contains(m, "\nrostrum_gateway_inflight_requests 2\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow requests never reached the handler")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.check(t, 202, "rtc", `{"room_id":"p-1"}`, "Authorization", "Bearer "+tokOld)
	// A third signed request finds the verifying slots taken.
	a := r.post(t, "rtc", "application/json", `{"room_id":"p-1"}`, forged...)
	wantError(t, a, http.StatusServiceUnavailable, "--max-inflight")
}

// TestGatewaySlowBodyTimesOut: a body that does not arrive within
// ReadTimeout is a 408, and its slot is free again.
func TestGatewaySlowBodyTimesOut(t *testing.T) {
	r, _, _, _, _ := credentialRig(t, "", func(c *gateway.Config) { c.MaxInflight, c.ReadTimeout = 1, 200*time.Millisecond })
	c := rawRequest(t, r.srv.URL, 100, `{"room_id":`, "Authorization", "Bearer "+tokOld)
	if code := readStatus(t, c); code != http.StatusRequestTimeout {
		t.Fatalf("a body that never arrives: %d, want 408", code)
	}
	r.check(t, 202, "rtc", `{"room_id":"p-1"}`, "Authorization", "Bearer "+tokOld)
}

func TestGatewayRefusesToStartWithoutCredential(t *testing.T) {
	k := testenv.StartKafka(t)
	routes, _ := route.New(nil, "test")
	_, err := gateway.New(gateway.Config{Client: k.Client(), Routes: routes})
	if err != gateway.ErrNoCredential || !strings.Contains(err.Error(), "--gateway-token-file") || !strings.Contains(err.Error(), "--gateway-insecure") {
		t.Fatalf("New without a credential: %v", err)
	}
	if _, err := gateway.New(gateway.Config{Client: k.Client(), Routes: routes, Insecure: true}); err != nil {
		t.Fatalf("New with Insecure: %v", err)
	}
}
