package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// saslFlags parses the Kafka security flags of args and resolves them, as
// every command does at start.
func saslFlags(t *testing.T, args ...string) (*Security, error) {
	t.Helper()
	fs := NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	var s Security
	s.RegisterKafka(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &s, s.Resolve()
}

// jwt returns an unsigned JWT for sub whose exp is exp: rostrum reads the
// exp claim and leaves the signature to the broker.
func jwt(sub string, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"sub": sub, "exp": exp.Unix()})
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc(claims) + "." + enc([]byte("signature-"+sub))
}

// replaceFile writes content to path atomically (a temporary file renamed
// over it), as a token-refreshing sidecar should.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// clientFirst runs the mechanism's first step against host and returns its
// message, or the error.
func clientFirst(m sasl.Mechanism, host string) (string, error) {
	_, msg, err := m.Authenticate(context.Background(), host)
	return string(msg), err
}

// bearerMessage is the OAUTHBEARER client-first message of RFC 7628
// §3.1 for tok, with no authorization id and no extensions.
func bearerMessage(tok string) string { return "n,,\x01auth=Bearer " + tok + "\x01\x01" }

// isolateAWS clears every AWS_ variable and points the shared credentials
// and config files into an empty directory (the SDK takes ~/.aws from HOME
// once, when it starts), so that only what a test sets reaches the AWS
// credential chain; it turns instance metadata off so nothing leaves the
// machine.
func isolateAWS(t *testing.T) (credentialsFile string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	dir := t.TempDir()
	credentialsFile = filepath.Join(dir, "credentials")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credentialsFile)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return credentialsFile
}

// TestSASLManagedFlagsNameTheField checks the settings of the oauthbearer
// and aws-msk-iam mechanisms: each wrong combination or bad token file
// stops start-up with an error naming the flag, and never the token.
func TestSASLManagedFlagsNameTheField(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	live := jwt("rostrum", time.Now().Add(time.Hour))
	tokFile := testenv.WriteFile(t, "token", live+"\n", 0o600)
	expired := jwt("rostrum", time.Now().Add(-time.Minute))
	cases := []struct {
		name, field string
		args        []string
	}{
		{"user with oauthbearer", "--kafka-user", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", tokFile, "--kafka-user", "u"}},
		{"password with oauthbearer", "--kafka-password", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", tokFile, "--kafka-password", "p"}},
		{"no token file", "--kafka-oauth-token-file", []string{"--kafka-sasl", "oauthbearer"}},
		{"token file alone", "--kafka-oauth-token-file", []string{"--kafka-oauth-token-file", tokFile}},
		{"token file with scram", "--kafka-oauth-token-file", []string{"--kafka-sasl", "scram-sha-256", "--kafka-user", "u", "--kafka-password", "p", "--kafka-oauth-token-file", tokFile}},
		{"token file with msk", "--kafka-oauth-token-file", []string{"--kafka-sasl", "aws-msk-iam", "--kafka-oauth-token-file", tokFile}},
		{"user with msk", "--kafka-user", []string{"--kafka-sasl", "aws-msk-iam", "--kafka-user", "u"}},
		{"password file with msk", "--kafka-password-file", []string{"--kafka-sasl", "aws-msk-iam", "--kafka-password-file", testenv.WriteFile(t, "pw", "p", 0o600)}},
		{"missing token file", "--kafka-oauth-token-file", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", filepath.Join(t.TempDir(), "missing")}},
		{"empty token file", "--kafka-oauth-token-file", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", testenv.WriteFile(t, "empty", "\n", 0o600)}},
		{"two lines", "--kafka-oauth-token-file", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", testenv.WriteFile(t, "two", live+"\n"+live+"\n", 0o600)}},
		{"JSON response", "write only its access_token", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", testenv.WriteFile(t, "json", `{"access_token":"`+live+`"}`, 0o600)}},
		{"expired JWT", "expired at", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", testenv.WriteFile(t, "expired", expired, 0o600)}},
		{"too large", "--kafka-oauth-token-file", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", testenv.WriteFile(t, "large", strings.Repeat("a", maxTokenBytes+1), 0o600)}},
		{"extensions alone", "--kafka-oauth-extensions", []string{"--kafka-oauth-extensions", "logicalCluster=lkc-1"}},
		{"extensions with msk", "--kafka-oauth-extensions", []string{"--kafka-sasl", "aws-msk-iam", "--kafka-oauth-extensions", "logicalCluster=lkc-1"}},
		{"extension not key=value", "--kafka-oauth-extensions", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", tokFile, "--kafka-oauth-extensions", "lkc-1"}},
		{"extension key not letters", "--kafka-oauth-extensions", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", tokFile, "--kafka-oauth-extensions", "logical-cluster=lkc-1"}},
		{"extension key auth", "--kafka-oauth-extensions", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", tokFile, "--kafka-oauth-extensions", "auth=x"}},
		{"extension key twice", "--kafka-oauth-extensions", []string{"--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", tokFile, "--kafka-oauth-extensions", "a=1,a=2"}},
		{"unknown mechanism", "oauthbearer or aws-msk-iam", []string{"--kafka-sasl", "gssapi", "--kafka-user", "u", "--kafka-password", "p"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := saslFlags(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %v does not name %s", err, c.field)
			}
			warnings := strings.Join(s.Warnings, "\n")
			testenv.AssertNoSecret(t, live, map[string]string{"error": err.Error(), "warnings": warnings})
			testenv.AssertNoSecret(t, expired, map[string]string{"error": err.Error(), "warnings": warnings})
		})
	}
}

// TestSASLOAuthBearerReadsTheFileAtEachAuthentication checks the
// mechanism built from the flags: each authentication sends the token the
// file holds at that moment, a rotation is picked up by the next one, and
// a file that turns bad fails the authentication naming the flag instead
// of reusing the token read before.
func TestSASLOAuthBearerReadsTheFileAtEachAuthentication(t *testing.T) {
	first, second := jwt("rostrum", time.Now().Add(time.Hour)), jwt("rostrum", time.Now().Add(2*time.Hour))
	path := testenv.WriteFile(t, "token", first+"\n", 0o644)
	s, err := saslFlags(t, "--kafka-sasl", "OAUTHBEARER", "--kafka-oauth-token-file", path, "--kafka-tls")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Warnings, "\n"); !strings.Contains(got, "--kafka-oauth-token-file "+path+" is readable by group or others") {
		t.Errorf("no warning on a token file readable by others: %q", got)
	}
	if s.kafkaMechanism.Name() != "OAUTHBEARER" {
		t.Fatalf("mechanism %s", s.kafkaMechanism.Name())
	}
	const host = "broker-1:9093"
	msg, err := clientFirst(s.kafkaMechanism, host)
	if err != nil || msg != bearerMessage(first) {
		t.Fatalf("first authentication: %q, %v; want the token of the file", msg, err)
	}

	replaceFile(t, path, second)
	if msg, err = clientFirst(s.kafkaMechanism, host); err != nil || msg != bearerMessage(second) {
		t.Fatalf("after rotation: %q, %v; want the new token", msg, err)
	}

	for name, content := range map[string]string{
		"empty":   "",
		"expired": jwt("rostrum", time.Now().Add(-time.Second)),
		"garbage": "not a token\x01",
	} {
		replaceFile(t, path, content)
		msg, err = clientFirst(s.kafkaMechanism, host)
		if err == nil || !strings.Contains(err.Error(), "--kafka-oauth-token-file "+path) {
			t.Errorf("%s file: %q, %v; want an error naming the flag and the file", name, msg, err)
		}
		if strings.Contains(msg, second) {
			t.Errorf("%s file: the previous token was sent again", name)
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err = clientFirst(s.kafkaMechanism, host); err == nil || !strings.Contains(err.Error(), "--kafka-oauth-token-file") {
		t.Errorf("removed file: %v; want an error naming the flag", err)
	}

	// An opaque (non-JWT) token is sent as it is: its expiry is the
	// broker's to judge.
	replaceFile(t, path, "opaque-token_0123456789~+/==\n")
	if msg, err = clientFirst(s.kafkaMechanism, host); err != nil || msg != bearerMessage("opaque-token_0123456789~+/==") {
		t.Fatalf("opaque token: %q, %v", msg, err)
	}

	// A refusal by the brokers names the token file, not a user.
	e := s.KafkaError(fmt.Errorf("metadata: %w", kerr.SaslAuthenticationFailed)).Error()
	if !strings.Contains(e, "SASL oauthbearer authentication with the token of --kafka-oauth-token-file "+path+" failed") {
		t.Errorf("refusal: %s", e)
	}
	if d := s.KafkaDescription(); d != "SASL OAUTHBEARER with the token of --kafka-oauth-token-file "+path+", TLS" {
		t.Errorf("description: %s", d)
	}
}

// TestSASLOAuthBearerExtensions checks that --kafka-oauth-extensions rides
// in the message after the token, keys sorted (RFC 7628 §3.1). (As a YAML
// list in the config file: cmd/rostrum's TestSASLOAuthExtensionsFromConfig.)
func TestSASLOAuthBearerExtensions(t *testing.T) {
	path := testenv.WriteFile(t, "token", "opaque-token", 0o600)
	want := "n,,\x01auth=Bearer opaque-token\x01identityPoolId=pool-Ab1\x01logicalCluster=lkc-ab12\x01\x01"
	s, err := saslFlags(t, "--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", path,
		"--kafka-oauth-extensions", "logicalCluster=lkc-ab12, identityPoolId=pool-Ab1")
	if err != nil {
		t.Fatal(err)
	}
	if msg, err := clientFirst(s.kafkaMechanism, "broker:9092"); err != nil || msg != want {
		t.Errorf("flag: %q, %v; want %q", msg, err, want)
	}
}

// TestSASLOAuthBearerWarnsWithoutTLS checks the clear-text warning.
func TestSASLOAuthBearerWarnsWithoutTLS(t *testing.T) {
	s, err := saslFlags(t, "--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", testenv.WriteFile(t, "token", "opaque", 0o600))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Warnings, "\n"); !strings.Contains(got, "without --kafka-tls sends the token in clear text") {
		t.Errorf("warnings %q", got)
	}
}

// asPlain lets kfake, which knows PLAIN and SCRAM but not OAUTHBEARER,
// stand in for an OAUTHBEARER broker: each authentication kgo starts runs
// the OAUTHBEARER mechanism first (reading the token file) and records its
// message, then authenticates with PLAIN. What it records is what an
// OAUTHBEARER broker would have received, connection by connection.
type asPlain struct {
	oauth sasl.Mechanism
	plain sasl.Mechanism

	mu     sync.Mutex
	sent   []string // client-first messages, in order
	failed int      // authentications that failed before sending
}

func (a *asPlain) Name() string { return "PLAIN" }

func (a *asPlain) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	_, msg, err := a.oauth.Authenticate(ctx, host)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.failed++
		return nil, nil, err
	}
	a.sent = append(a.sent, string(msg))
	return a.plain.Authenticate(ctx, host)
}

func (a *asPlain) state() (sent []string, failed int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.sent...), a.failed
}

// connCounter counts the connections kgo opens.
type connCounter struct {
	mu sync.Mutex
	n  int
}

func (c *connCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
}

func (c *connCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// errLog is a kgo.Logger that keeps the err of each line at warn level and
// above, as the commands' Kafka logger passes it on to zap.
type errLog struct {
	mu   sync.Mutex
	errs []string
}

func (*errLog) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l *errLog) Log(_ kgo.LogLevel, _ string, keyvals ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i+1 < len(keyvals); i += 2 {
		if keyvals[i] == "err" {
			l.errs = append(l.errs, fmt.Sprint(keyvals[i+1]))
		}
	}
}

func (l *errLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}

// TestSASLOAuthBearerReauthenticationRereadsTheFile runs the mechanism
// built from the flags inside a real kgo client against kfake with a
// session lifetime (connections.max.reauth.ms, KIP-368): kgo must run the
// mechanism again when the session runs out, on the same connection, and
// so send the token the file holds then. A file that turned bad fails the
// authentication, logged through rostrum's Kafka logger with the flag, and
// no authentication reuses the earlier token; once the file is fixed,
// connections authenticate again.
func TestSASLOAuthBearerReauthenticationRereadsTheFile(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("PLAIN", "svc", "svc-pass"),
		// A 1.5 s lifetime: kgo re-authenticates about 0.5 s after
		// authenticating (it keeps at least 1 s in hand).
		kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": "1500"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	tokens := []string{jwt("rostrum", time.Now().Add(time.Hour)), jwt("rostrum", time.Now().Add(2*time.Hour)), jwt("rostrum", time.Now().Add(3*time.Hour))}
	path := testenv.WriteFile(t, "token", tokens[0], 0o600)
	s, err := saslFlags(t, "--kafka-sasl", "oauthbearer", "--kafka-oauth-token-file", path)
	if err != nil {
		t.Fatal(err)
	}
	mech := &asPlain{oauth: s.kafkaMechanism, plain: plain.Auth{User: "svc", Pass: "svc-pass"}.AsMechanism()}
	conns := new(connCounter)
	logs := new(errLog)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(mech), kgo.WithHooks(conns),
		kgo.WithLogger(logs), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)

	// request sends a metadata request to the one broker; its error
	// says whether the connection could authenticate.
	request := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := cl.Broker(0).Request(ctx, kmsg.NewPtrMetadataRequest())
		return err
	}
	// until sends requests until ok holds, failing after 20 s.
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				sent, failed := mech.state()
				t.Fatalf("%s: never happened (%d authentications, %d failed, %d connections)", what, len(sent), failed, conns.count())
			}
			_ = request()
		}
	}
	sentWith := func(tok string) func() bool {
		return func() bool {
			sent, _ := mech.state()
			for _, m := range sent {
				if m == bearerMessage(tok) {
					return true
				}
			}
			return false
		}
	}

	if err := request(); err != nil {
		t.Fatal(err)
	}
	if sent, _ := mech.state(); len(sent) == 0 || sent[0] != bearerMessage(tokens[0]) {
		t.Fatalf("first authentication sent %q", sent)
	}

	// Rotation: the next re-authentication reads the new token, on a
	// connection already open (more authentications than connections).
	replaceFile(t, path, tokens[1])
	until("re-authentication with the rotated token", sentWith(tokens[1]))
	if sent, _ := mech.state(); len(sent) <= conns.count() {
		t.Errorf("%d authentications on %d connections: the rotated token came with a new connection, not a re-authentication", len(sent), conns.count())
	}

	// The file turns bad: authentications fail, none reuses a token.
	replaceFile(t, path, "")
	sentBefore, _ := mech.state()
	until("a failed authentication", func() bool { _, failed := mech.state(); return failed > 0 })
	if err := request(); err == nil {
		// The request may ride a session that has not run out yet;
		// the next re-authentication fails.
		until("a failed request", func() bool { return request() != nil })
	}
	if sent, _ := mech.state(); len(sent) != len(sentBefore) {
		t.Errorf("%d authentications sent a token while the file was empty", len(sent)-len(sentBefore))
	}
	if errs := logs.all(); !slices.Contains(errs, "--kafka-oauth-token-file "+path+" is empty") {
		t.Errorf("no log line with the token file's error; logged: %q", errs)
	}

	// Fixed: connections authenticate again with the new token.
	replaceFile(t, path, tokens[2])
	until("authentication with the fixed file", func() bool { return request() == nil })
	if !sentWith(tokens[2])() {
		t.Error("the fixed file's token was not sent")
	}
}

// mskHost is the address of an MSK broker's IAM listener; the region in
// the name is the one the request is signed for.
const mskHost = "b-1.rostrum.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"

// mskMessage is the AWS_MSK_IAM client-first message.
type mskMessage map[string]string

// sigV4 is the test's own AWS Signature Version 4 of an MSK IAM message,
// written from AWS's specification (the canonical request of a GET of "/"
// on host with the query parameters and only the host header signed), to
// check the mechanism's signature without its code.
func sigV4(m mskMessage, secretKey string) string {
	params := map[string]string{
		"Action":              m["action"],
		"X-Amz-Algorithm":     m["x-amz-algorithm"],
		"X-Amz-Credential":    m["x-amz-credential"],
		"X-Amz-Date":          m["x-amz-date"],
		"X-Amz-Expires":       m["x-amz-expires"],
		"X-Amz-SignedHeaders": m["x-amz-signedheaders"],
	}
	if tok, ok := m["x-amz-security-token"]; ok {
		params["X-Amz-Security-Token"] = tok
	}
	uriEncode := func(s string) string {
		var b strings.Builder
		for _, c := range []byte(s) {
			if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~", c) >= 0 {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
		return b.String()
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var query []string
	for _, k := range keys {
		query = append(query, uriEncode(k)+"="+uriEncode(params[k]))
	}
	emptyHash := sha256.Sum256(nil)
	canonical := strings.Join([]string{"GET", "/", strings.Join(query, "&"), "host:" + m["host"], "", "host", hex.EncodeToString(emptyHash[:])}, "\n")
	scope := strings.SplitN(m["x-amz-credential"], "/", 2)[1] // date/region/service/aws4_request
	canonicalHash := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + m["x-amz-date"] + "\n" + scope + "\n" + hex.EncodeToString(canonicalHash[:])
	mac := func(key []byte, data string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(data))
		return h.Sum(nil)
	}
	parts := strings.Split(scope, "/")
	key := []byte("AWS4" + secretKey)
	for _, p := range parts { // date, region, service, "aws4_request"
		key = mac(key, p)
	}
	return hex.EncodeToString(mac(key, toSign))
}

// checkMSKMessage decodes the mechanism's first message for mskHost and
// checks its fields and its signature with secretKey.
func checkMSKMessage(t *testing.T, s *Security, accessKey, secretKey, sessionToken string) {
	t.Helper()
	if s.kafkaMechanism.Name() != "AWS_MSK_IAM" {
		t.Fatalf("mechanism %s", s.kafkaMechanism.Name())
	}
	raw, err := clientFirst(s.kafkaMechanism, mskHost)
	if err != nil {
		t.Fatal(err)
	}
	var m mskMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("not a JSON object: %v: %q", err, raw)
	}
	date, err := time.Parse("20060102T150405Z", m["x-amz-date"])
	if err != nil || time.Since(date).Abs() > time.Hour {
		t.Errorf("x-amz-date %q: %v", m["x-amz-date"], err)
	}
	want := map[string]string{
		"version":             "2020_10_22",
		"host":                strings.TrimSuffix(mskHost, ":9098"),
		"action":              "kafka-cluster:Connect",
		"x-amz-algorithm":     "AWS4-HMAC-SHA256",
		"x-amz-credential":    accessKey + "/" + date.Format("20060102") + "/eu-west-1/kafka-cluster/aws4_request",
		"x-amz-expires":       "300",
		"x-amz-signedheaders": "host",
	}
	if sessionToken != "" {
		want["x-amz-security-token"] = sessionToken
	} else if tok, ok := m["x-amz-security-token"]; ok {
		t.Errorf("a security token %q without a session", tok)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %q, want %q", k, m[k], v)
		}
	}
	if m["user-agent"] == "" {
		t.Error("no user-agent")
	}
	if got, want := m["x-amz-signature"], sigV4(m, secretKey); got != want {
		t.Errorf("x-amz-signature %s, want %s (signed with another secret key?)", got, want)
	}
	if strings.Contains(raw, secretKey) {
		t.Error("the secret key is in the message")
	}
}

// TestSASLAWSMSKIAM checks that --kafka-sasl aws-msk-iam takes its
// credentials from each source of the standard AWS chain (all offline:
// temporary files and loopback servers), signs a well-formed MSK IAM
// message with them, implies TLS, and stops start-up naming the flag when
// there are none.
func TestSASLAWSMSKIAM(t *testing.T) {
	const (
		akid   = "AKIDROSTRUMTEST0001"
		secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	)
	t.Run("environment", func(t *testing.T) {
		isolateAWS(t)
		t.Setenv("AWS_ACCESS_KEY_ID", akid)
		t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
		t.Setenv("AWS_SESSION_TOKEN", "session/token+from=env")
		s, err := saslFlags(t, "--kafka-sasl", "aws-msk-iam")
		if err != nil {
			t.Fatal(err)
		}
		checkMSKMessage(t, s, akid, secret, "session/token+from=env")
		if s.kafkaTLSConfig == nil || !s.kafkaTLS.enabled() {
			t.Error("aws-msk-iam did not imply --kafka-tls")
		}
		if d := s.KafkaDescription(); !strings.HasPrefix(d, "SASL aws-msk-iam with AWS credentials from EnvConfigCredentials") || !strings.HasSuffix(d, ", TLS") {
			t.Errorf("description: %s", d)
		}
		e := s.KafkaError(kerr.SaslAuthenticationFailed).Error()
		if !strings.Contains(e, "kafka-cluster:Connect") || strings.Contains(e, secret) {
			t.Errorf("refusal: %s", e)
		}
	})
	t.Run("shared credentials file with a profile", func(t *testing.T) {
		writeAt(t, isolateAWS(t), `[default]
aws_access_key_id = AKIDDEFAULTPROFILE1
aws_secret_access_key = default-secret

[rostrum]
aws_access_key_id = `+akid+`
aws_secret_access_key = `+secret+`
`)
		t.Setenv("AWS_PROFILE", "rostrum")
		s, err := saslFlags(t, "--kafka-sasl", "aws-msk-iam", "--kafka-tls-server-name", "b-1.example")
		if err != nil {
			t.Fatal(err)
		}
		checkMSKMessage(t, s, akid, secret, "")
		if s.kafkaTLSConfig == nil || s.kafkaTLSConfig.ServerName != "b-1.example" {
			t.Errorf("the given TLS settings were not kept: %+v", s.kafkaTLSConfig)
		}
	})
	t.Run("web identity", func(t *testing.T) {
		isolateAWS(t)
		const role = "arn:aws:iam::123456789012:role/rostrum"
		idToken := jwt("system:serviceaccount:rostrum:rostrum", time.Now().Add(time.Hour))
		var calls atomic.Int32
		sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "AssumeRoleWithWebIdentity" ||
				r.Form.Get("RoleArn") != role || r.Form.Get("WebIdentityToken") != idToken {
				http.Error(w, "unexpected request", http.StatusBadRequest)
				t.Errorf("STS got %v (%v)", r.Form, err)
				return
			}
			fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>ASIAROSTRUMIRSA00001</AccessKeyId>
      <SecretAccessKey>irsa-secret-key</SecretAccessKey>
      <SessionToken>irsa-session-token</SessionToken>
      <Expiration>%s</Expiration>
    </Credentials>
    <AssumedRoleUser><Arn>%s/rostrum</Arn><AssumedRoleId>AROA:rostrum</AssumedRoleId></AssumedRoleUser>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339), role)
		}))
		t.Cleanup(sts.Close)
		t.Setenv("AWS_REGION", "eu-west-1")
		t.Setenv("AWS_ROLE_ARN", role)
		t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", testenv.WriteFile(t, "web-identity-token", idToken, 0o600))
		t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
		s, err := saslFlags(t, "--kafka-sasl", "aws-msk-iam")
		if err != nil {
			t.Fatal(err)
		}
		checkMSKMessage(t, s, "ASIAROSTRUMIRSA00001", "irsa-secret-key", "irsa-session-token")
		checkMSKMessage(t, s, "ASIAROSTRUMIRSA00001", "irsa-secret-key", "irsa-session-token")
		if n := calls.Load(); n != 1 {
			t.Errorf("%d calls to STS; the credentials are cached until they near expiry", n)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		isolateAWS(t)
		_, err := saslFlags(t, "--kafka-sasl", "aws-msk-iam")
		if err == nil || !strings.Contains(err.Error(), "--kafka-sasl aws-msk-iam: no AWS credentials") {
			t.Fatalf("error %v; want one naming --kafka-sasl aws-msk-iam", err)
		}
	})
	t.Run("no region", func(t *testing.T) {
		isolateAWS(t)
		t.Setenv("AWS_ACCESS_KEY_ID", akid)
		t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
		s, err := saslFlags(t, "--kafka-sasl", "aws-msk-iam")
		if err != nil {
			t.Fatal(err)
		}
		// A broker name that does not carry the region, and no AWS_REGION.
		if _, err := clientFirst(s.kafkaMechanism, "kafka.internal:9098"); err == nil || !strings.Contains(err.Error(), "--kafka-sasl aws-msk-iam") {
			t.Errorf("error %v; want one naming --kafka-sasl aws-msk-iam", err)
		}
	})
}

// writeAt writes content to path, which the test owns.
func writeAt(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
