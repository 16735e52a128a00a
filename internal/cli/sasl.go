package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/twmb/franz-go/pkg/sasl"
	saslaws "github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// The SASL mechanisms of managed Kafka services, beside the user and
// password ones of security.go (docs/DESIGN.md §15, "Kafka authentication"):
//
//   - oauthbearer: SASL OAUTHBEARER (RFC 7628) with the bearer token of
//     --kafka-oauth-token-file, which something else (an identity
//     provider's sidecar, a Kubernetes projected token) keeps fresh. The
//     file is read at every authentication, never cached.
//   - aws-msk-iam: Amazon MSK's AWS_MSK_IAM, a SigV4-signed request made
//     with credentials from the standard AWS chain (the AWS SDK's
//     config.LoadDefaultConfig). It implies --kafka-tls: MSK's IAM
//     listener speaks TLS only.
//
// Both go through franz-go's own mechanisms (pkg/sasl/oauth,
// pkg/sasl/aws), whose callback kgo calls at each authentication: when it
// opens a connection to a broker, and when it re-authenticates one whose
// session lifetime is running out (KIP-368: the broker announces the
// lifetime, kgo re-authenticates at 95–98% of it, before the next request
// it sends on that connection). A broker that announces no lifetime
// (connections.max.reauth.ms=0, Apache Kafka's default) never asks for
// re-authentication, so only new connections read fresh credentials.
const (
	saslOAuthBearer = "oauthbearer"
	saslAWSMSKIAM   = "aws-msk-iam"
)

// maxTokenBytes bounds what is read of a token file: a JWT is a few KiB,
// anything much larger is not a token.
const maxTokenBytes = 64 << 10

// awsCredentialsTimeout bounds the first fetch of AWS credentials at start
// (a web identity or metadata service that does not answer).
const awsCredentialsTimeout = 30 * time.Second

// awsCredentialsEarly is how long before their expiry the SDK's cache
// fetches new temporary credentials (web identity, container, instance
// metadata), so that no authentication signs with credentials about to
// expire.
const awsCredentialsEarly = 5 * time.Minute

func (s *Security) registerKafkaManaged(fs *FlagSet) {
	fs.Group("kafka").Tuning().StringVar(&s.kafkaOAuthTokenFile, "kafka-oauth-token-file", "",
		"file holding the OAUTHBEARER token (one line, e.g. a JWT) for --kafka-sasl oauthbearer; read at every connection and re-authentication, so keep it fresh")
	fs.Group("kafka").Tuning().StringVar(&s.kafkaOAuthExtensions, "kafka-oauth-extensions", "",
		"SASL extensions sent with the OAUTHBEARER token: key=value[,key=value...] (Confluent Cloud: logicalCluster=lkc-...,identityPoolId=pool-...)")
}

// resolveManagedSASL checks the settings of the oauthbearer and
// aws-msk-iam mechanisms and, for those, sets s.kafkaMechanism; it reports
// whether mech is one of them. It runs in Resolve, after the TLS settings
// and before the checks of the user and password mechanisms. Errors name
// the flags.
func (s *Security) resolveManagedSASL(mech string) (bool, error) {
	for _, f := range []struct{ name, v string }{
		{"--kafka-oauth-token-file", s.kafkaOAuthTokenFile},
		{"--kafka-oauth-extensions", s.kafkaOAuthExtensions},
	} {
		switch {
		case f.v == "" || mech == saslOAuthBearer:
		case mech == "":
			return false, fmt.Errorf("%s needs --kafka-sasl oauthbearer", f.name)
		default:
			return false, fmt.Errorf("%s goes with --kafka-sasl oauthbearer only, not %s", f.name, mech)
		}
	}
	if mech != saslOAuthBearer && mech != saslAWSMSKIAM {
		return false, nil
	}
	switch {
	case s.kafkaUser != "":
		return true, fmt.Errorf("--kafka-user does not go with --kafka-sasl %s, which takes no user", mech)
	case s.kafkaPass.IsSet():
		return true, fmt.Errorf("--kafka-password and --kafka-password-file do not go with --kafka-sasl %s, which takes no password", mech)
	}
	if mech == saslOAuthBearer {
		return true, s.resolveOAuth()
	}
	return true, s.resolveAWS()
}

func (s *Security) resolveOAuth() error {
	if s.kafkaOAuthTokenFile == "" {
		return errors.New("--kafka-oauth-token-file is required with --kafka-sasl oauthbearer")
	}
	ext, err := parseExtensions(s.kafkaOAuthExtensions)
	if err != nil {
		return err
	}
	f := tokenFile{path: s.kafkaOAuthTokenFile, extensions: ext, now: time.Now}
	// At start the file must hold a usable token: a setup that cannot
	// authenticate stops here, naming the flag, not at the first broker.
	if _, err := f.read(); err != nil {
		return err
	}
	if fi, err := os.Stat(f.path); err == nil && fi.Mode().Perm()&0o044 != 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("--kafka-oauth-token-file %s is readable by group or others (mode %04o); chmod 600 it", f.path, fi.Mode().Perm()))
	}
	if s.kafkaTLSConfig == nil {
		s.Warnings = append(s.Warnings, "--kafka-sasl oauthbearer without --kafka-tls sends the token in clear text")
	}
	s.kafkaMechanism = oauth.Oauth(f.auth)
	return nil
}

// tokenFile is the OAUTHBEARER token file, read at every authentication.
//
// The token in force is always the file's current one. A read that fails
// (the file missing, empty, not a token, or a JWT whose exp has passed)
// fails that authentication with an error naming the flag, which kgo logs
// ("unable to initialize sasl") and retries with a new connection; the
// token read before is never reused in its place, so a broken refresh
// shows at once instead of when the broker finally refuses an expired
// token. Whatever refreshes the file should replace it atomically (write a
// temporary file, rename it over), as Kubernetes projected volumes do.
type tokenFile struct {
	path       string
	extensions map[string]string // of --kafka-oauth-extensions; nil for none
	now        func() time.Time  // the clock: time.Now
}

// auth is the oauth.Oauth callback: the token as the file holds it now.
func (f tokenFile) auth(context.Context) (oauth.Auth, error) {
	tok, err := f.read()
	if err != nil {
		return oauth.Auth{}, err
	}
	return oauth.Auth{Token: tok, Extensions: f.extensions}, nil
}

// read returns the token of the file: its content without surrounding
// white space, made of the characters of RFC 6750's b64token only (which
// also keeps a token from breaking the SASL message it goes into). When
// the token is a JWT, its exp claim must lie ahead; the signature is not
// checked, that is the broker's job. Errors name the flag and the file,
// never the token.
func (f tokenFile) read() (string, error) {
	const flagName = "--kafka-oauth-token-file"
	b, err := readAtMost(f.path, maxTokenBytes)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	tok := string(bytes.TrimSpace(b))
	if tok == "" {
		return "", fmt.Errorf("%s %s is empty", flagName, f.path)
	}
	if i := strings.IndexFunc(tok, func(r rune) bool { return !isTokenChar(r) }); i >= 0 {
		hint := ""
		if tok[0] == '{' {
			hint = " (a JSON token response? write only its access_token)"
		}
		return "", fmt.Errorf("%s %s holds no bearer token: byte %d is not a token character (RFC 6750)%s", flagName, f.path, i, hint)
	}
	if exp, ok := jwtExpiry(tok); ok && !f.now().Before(exp) {
		return "", fmt.Errorf("%s %s: the token expired at %s (is whatever refreshes the file running?)", flagName, f.path, exp.UTC().Format(time.RFC3339))
	}
	return tok, nil
}

// parseExtensions parses --kafka-oauth-extensions: comma-separated
// key=value pairs (a YAML list in the config file arrives so joined). Keys
// are letters only and not "auth" (RFC 7628 §3.1); values hold no control
// characters, which would break the SASL message.
func parseExtensions(v string) (map[string]string, error) {
	const flagName = "--kafka-oauth-extensions"
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	ext := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: %q is not key=value", flagName, kv)
		case k == "" || strings.ContainsFunc(k, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }):
			return nil, fmt.Errorf("%s: key %q must be letters only", flagName, k)
		case k == "auth":
			return nil, fmt.Errorf("%s: key \"auth\" is the token's own", flagName)
		case strings.ContainsFunc(val, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return nil, fmt.Errorf("%s: the value of %s holds a control character", flagName, k)
		}
		if _, dup := ext[k]; dup {
			return nil, fmt.Errorf("%s: key %s given twice", flagName, k)
		}
		ext[k] = val
	}
	return ext, nil
}

// readAtMost reads the file, failing when it is larger than limit bytes.
func readAtMost(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a token", path, limit)
	}
	return b, nil
}

// isTokenChar reports whether r may appear in an RFC 6750 b64token:
// ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/", and "=" (padding).
func isTokenChar(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("-._~+/=", r)
}

// jwtExpiry returns the exp claim of a JWT (three base64url parts, the
// middle one a JSON object), without checking its signature; ok is false
// for any other token (an opaque token has no expiry rostrum can see).
func jwtExpiry(tok string) (exp time.Time, ok bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	if *claims.Exp < 0 || *claims.Exp > 1<<40 { // before 1970 or after year 36812: not a date
		return time.Time{}, false
	}
	return time.Unix(int64(*claims.Exp), 0), true
}

// resolveAWS builds the aws-msk-iam mechanism on the standard AWS
// credential chain and fetches credentials once, so that a setup without
// any stops start-up.
//
// The chain is the AWS SDK's, in its order: the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the shared
// files ~/.aws/credentials and ~/.aws/config with AWS_PROFILE (static
// keys, role assumption, SSO, credential_process), web identity (IRSA on
// EKS: AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE, exchanged at STS),
// container credentials (ECS, EKS Pod Identity) and EC2 instance metadata.
// Temporary credentials are cached and fetched again awsCredentialsEarly
// before they expire.
func (s *Security) resolveAWS() error {
	const what = "--kafka-sasl aws-msk-iam"
	ctx, cancel := context.WithTimeout(context.Background(), awsCredentialsTimeout)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithCredentialsCacheOptions(func(o *aws.CredentialsCacheOptions) {
		o.ExpiryWindow = awsCredentialsEarly
	}))
	if err != nil {
		return fmt.Errorf("%s: AWS configuration: %w", what, err)
	}
	if cfg.Credentials == nil {
		return fmt.Errorf("%s: no AWS credential source configured", what)
	}
	c, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("%s: no AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, "+
			"or AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE, or run where container or instance metadata serves a role): %w", what, err)
	}
	s.kafkaAWSSource = c.Source
	if s.kafkaTLSConfig == nil {
		// MSK's IAM listener (port 9098) speaks TLS only, with
		// certificates public CAs sign: the defaults fit.
		s.kafkaTLS.on = true
		if s.kafkaTLSConfig, err = s.kafkaTLS.config(); err != nil {
			return err
		}
	}
	creds := cfg.Credentials
	s.kafkaMechanism = namedMechanism{what, saslaws.ManagedStreamingIAM(func(ctx context.Context) (saslaws.Auth, error) {
		c, err := creds.Retrieve(ctx)
		if err != nil {
			return saslaws.Auth{}, fmt.Errorf("AWS credentials: %w", err)
		}
		return saslaws.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken}, nil
	})}
	return nil
}

// namedMechanism prefixes the errors of a mechanism's Authenticate with
// the setting they concern, so that kgo's log line and the start-up error
// say where to look (franz-go's "cannot determine the region in …" alone
// does not).
type namedMechanism struct {
	name string
	sasl.Mechanism
}

func (m namedMechanism) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	s, b, err := m.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", m.name, err)
	}
	return s, b, nil
}

// saslIdentity says, for messages, with what the Kafka client
// authenticates (never a Secret) and which settings to check when the
// brokers refuse it.
func (s *Security) saslIdentity() (who, check string) {
	switch strings.ToLower(s.kafkaSASL) {
	case saslOAuthBearer:
		return fmt.Sprintf("with the token of --kafka-oauth-token-file %s", s.kafkaOAuthTokenFile),
			"--kafka-oauth-token-file: the token's issuer, audience, scope and expiry, as the brokers expect them"
	case saslAWSMSKIAM:
		return fmt.Sprintf("with AWS credentials from %s", s.kafkaAWSSource),
			"the AWS credentials, and that their IAM policy allows kafka-cluster:Connect on the cluster"
	}
	return fmt.Sprintf("as user %q", s.kafkaUser), "--kafka-sasl, --kafka-user and --kafka-password"
}
