package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
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
	"github.com/rostrumhq/rostrum/internal/testenv"
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

// wantError checks an error answer: its code, a JSON body with error and
// the request id, and the X-Request-Id header.
func wantError(t *testing.T, a answer, code int, errHas string) {
	t.Helper()
	if a.code != code {
		t.Fatalf("code %d, want %d (body %s)", a.code, code, a.raw)
	}
	msg, _ := a.body["error"].(string)
	if !strings.Contains(msg, errHas) {
		t.Errorf("error %q does not contain %q", msg, errHas)
	}
	id, _ := a.body["request_id"].(string)
	if id == "" || a.header.Get("X-Request-Id") != id {
		t.Errorf("request_id %q, X-Request-Id %q", id, a.header.Get("X-Request-Id"))
	}
	if a.header.Get("Content-Type") != "application/problem+json" || a.body["status"] != float64(code) ||
		a.body["code"] == nil || a.body["type"] == nil || a.body["detail"] != a.body["error"] {
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

func TestGatewayAuthBearerAndHMAC(t *testing.T) {
	tokFile := writeFile(t, "tokens", "tok-old\n")
	secFile := writeFile(t, "secrets", "sig-old\n")
	tokens, err := auth.LoadTokens(tokFile)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := auth.LoadSecrets(secFile)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, "test", func(c *gateway.Config) {
		c.Insecure, c.Tokens, c.Secrets, c.SignatureHeader = false, tokens, secrets, "X-Vendor-Signature"
	})
	body := `{"room_id":"p-1"}`
	sign := func(secret string) string { return auth.SignHMAC([]byte(secret), []byte(body)) }
	check := func(code int, hdr ...string) {
		t.Helper()
		a := r.post(t, "rtc", "application/json", body, hdr...)
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
	check(401)
	check(401, "Authorization", "Bearer wrong")
	check(202, "Authorization", "Bearer tok-old")
	check(202, "X-Vendor-Signature", sign("sig-old"))
	check(202, "X-Vendor-Signature", "sha256="+sign("sig-old"))
	check(401, "X-Vendor-Signature", sign("other"))
	check(401, "X-Rostrum-Signature", sign("sig-old")) // not the configured header

	// Rotation: the files change, Reload (what SIGHUP does) takes them.
	if err := os.WriteFile(tokFile, []byte("tok-new\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secFile, []byte("sig-new\nsig-old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check(202, "Authorization", "Bearer tok-old") // not re-read yet
	if err := tokens.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := secrets.Reload(); err != nil {
		t.Fatal(err)
	}
	check(401, "Authorization", "Bearer tok-old")
	check(202, "Authorization", "Bearer tok-new")
	check(202, "X-Vendor-Signature", sign("sig-new"))
	check(202, "X-Vendor-Signature", sign("sig-old"))
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
