package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/internal/problem"
)

// CallbackPath is the path prefix of the callback endpoint; the source
// follows it.
const CallbackPath = "/v1/callbacks/"

// Header names of the records the gateway writes.
const (
	HeaderSource     = "rostrum-source"
	HeaderReceivedAt = "rostrum-received-at"
	HeaderRequestID  = "rostrum-request-id"
)

// retryAfter is the Retry-After of a 503, in seconds.
const retryAfter = "1"

// Gateway is the HTTP handler of `rostrum gateway`: the callback endpoint,
// /healthz, /readyz and /metrics. It is safe for concurrent use.
type Gateway struct {
	cfg       Config
	sem       chan struct{}        // one slot per pending callback request whose credentials were checked
	verifying chan struct{}        // one slot per signed request reading its body to check the signature
	envs      map[string]*envRoute // by environment
	sources   []*sourceSeries      // by source, as Sources, then "other"
	ids       ids                  // the request ids it makes
	reqs      sync.Pool            // *request
	open      bool                 // no credential and Insecure: every request passes
	prod      producer             // cfg.Client
	other     http.Handler         // every route but the callbacks'
	sigKey    string               // cfg.SignatureHeader, canonical (a key of http.Header)
	tsKey     string               // cfg.TimestampHeader, canonical
}

// envRoute is an environment the routes send rooms to: its topic and its
// series for each source, indexed as Sources.
type envRoute struct {
	topics []string
	series []*envSeries
}

// producer is what the callback endpoint needs of its Kafka client
// (Config.Client): kgo's asynchronous Produce, which, unlike ProduceSync,
// lets a request wait for its records with nothing allocated for the wait
// (request.produce). The package's benchmarks put in one that writes
// nothing, to measure the gateway's own cost apart from kgo's and a
// broker's.
type producer interface {
	Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error))
}

// New returns a Gateway for cfg, or an error when cfg is invalid (see
// Config.Validate; a Config with no credential and not Insecure is
// ErrNoCredential).
func New(cfg Config) (*Gateway, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Gateway{cfg: cfg, sem: make(chan struct{}, cfg.MaxInflight), verifying: make(chan struct{}, cfg.MaxInflight),
		envs: map[string]*envRoute{}, prod: cfg.Client,
		sigKey: textproto.CanonicalMIMEHeaderKey(cfg.SignatureHeader), tsKey: textproto.CanonicalMIMEHeaderKey(cfg.TimestampHeader)}
	for _, env := range cfg.Routes.Envs() {
		e := &envRoute{}
		for _, s := range Sources {
			e.topics = append(e.topics, Topic(cfg.TopicPrefix, env, s))
			e.series = append(e.series, cfg.Metrics.envSeries(env, s))
		}
		g.envs[env] = e
	}
	for i := range sourceOther + 1 {
		g.sources = append(g.sources, cfg.Metrics.sourceSeries(sourceLabel(i)))
	}
	g.other = problem.Handler(http.HandlerFunc(g.route))
	var b [6]byte
	_, _ = rand.Read(b[:])
	g.ids.base = hex.EncodeToString(b[:])
	if g.open = cfg.Insecure && cfg.Tokens == nil && cfg.Secrets == nil; g.open {
		cfg.Logger.Warn("gateway: no credential configured (--gateway-insecure): every callback request is accepted without authentication")
	}
	return g, nil
}

// Metrics returns the gateway's series.
func (g *Gateway) Metrics() *Metrics { return g.cfg.Metrics }

// ServeHTTP routes a request to the callback endpoint or a probe. Every
// error answer is a problem (internal/problem): the gateway's own carry
// its request id, and problem.Handler turns any other (the metrics
// handler's) into one. The callback endpoint answers problems and JSON
// only, so it goes without problem.Handler's rewriting.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; strings.HasPrefix(p, CallbackPath) {
		g.callback(w, r, p[len(CallbackPath):])
		return
	}
	g.other.ServeHTTP(w, r)
}

// route serves every path but the callbacks'.
func (g *Gateway) route(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	case p == "/readyz":
		g.ready(w, r)
	case p == "/metrics":
		g.cfg.Metrics.Handler().ServeHTTP(w, r)
	default:
		q := g.getRequest(r, time.Now(), sourceOther)
		defer g.putRequest(q)
		g.fail(w, q, http.StatusNotFound, "no such endpoint: callbacks go to POST "+CallbackPath+"{rtc|client|signal}")
	}
}

// ready answers 200 when a broker answers a metadata request, else a 503
// problem whose reason is "kafka": the class, like rostrum run's /readyz,
// never the client's error text (it names addresses).
func (g *Gateway) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := g.cfg.Client.Ping(ctx); err != nil {
		g.cfg.Logger.Warn("gateway not ready", zap.String("reason", "kafka"), zap.Error(err))
		problem.Write(w, http.StatusServiceUnavailable, problem.Unavailable,
			"not ready: kafka (the cause is in the gateway's log)", map[string]any{"reason": "kafka"})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ready\n")
}

func validSource(s string) bool { return s == "rtc" || s == "client" || s == "signal" }

// callback handles POST /v1/callbacks/{source}. The checks run from the
// cheapest to the dearest, and nothing is produced until every object of
// the request has been parsed and routed.
func (g *Gateway) callback(w http.ResponseWriter, r *http.Request, source string) {
	q := g.getRequest(r, time.Now(), sourceIndex(source)) // sourceOther for an unknown source
	defer g.putRequest(q)
	tr := g.startTrace(r, source, q)
	defer tr.end()
	// Every answer before the body is read closes the connection, so that
	// a body that never comes holds nothing.
	if !validSource(source) {
		w.Header().Set("Connection", "close")
		g.fail(w, q, http.StatusNotFound, fmt.Sprintf("unknown source %q: the sources are rtc, client and signal", source))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Connection", "close")
		w.Header().Set("Allow", http.MethodPost)
		g.fail(w, q, http.StatusMethodNotAllowed, "callbacks are POSTed")
		return
	}
	// The headers first: a request without a credential they can vouch
	// for is refused before it takes a slot or sends its body.
	verdict, why := g.checkHeaders(r, q.start)
	if verdict == refused {
		w.Header().Set("Connection", "close")
		g.fail(w, q, http.StatusUnauthorized, why)
		return
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		w.Header().Set("Connection", "close")
		g.fail(w, q, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type must be application/json, got %q", ct))
		return
	}
	// Every request gets a deadline for its body, whatever server runs the
	// handler (Serve sets the same one for the whole request).
	_ = http.NewResponseController(w).SetReadDeadline(q.start.Add(g.cfg.ReadTimeout))

	// A signed request's body is read to check the signature, holding a
	// slot of its own (as many as --max-inflight), never an in-flight one:
	// signatures that will not verify cannot crowd out authenticated
	// requests.
	var body []byte
	read := false // body is in
	if verdict == signed {
		select {
		case g.verifying <- struct{}{}:
		default:
			w.Header().Set("Connection", "close")
			g.busy(w, q)
			return
		}
		g.cfg.Metrics.verify.Inc()
		b, ok := g.readBodyOrFail(w, r, q)
		verified := ok && g.verifySignature(r, b)
		g.cfg.Metrics.verify.Dec()
		<-g.verifying
		if !ok { // answered
			return
		}
		if !verified {
			g.fail(w, q, http.StatusUnauthorized, "invalid signature in "+g.cfg.SignatureHeader)
			return
		}
		body, read = b, true
	}
	select {
	case g.sem <- struct{}{}:
		defer func() { <-g.sem }()
	default:
		if !read {
			w.Header().Set("Connection", "close")
		}
		g.busy(w, q)
		return
	}
	g.cfg.Metrics.inflight.Inc()
	defer g.cfg.Metrics.inflight.Dec()
	if !read {
		b, ok := g.readBodyOrFail(w, r, q)
		if !ok {
			return
		}
		body = b
	}

	objs, array, err := parse(body, q.objs)
	q.objs = objs
	if err != nil {
		g.fail(w, q, http.StatusBadRequest, err.Error())
		return
	}
	recs := q.split.split(objs, array)
	krecs, ptrs, envs := q.records(len(recs))
	q.idHeader = append(q.idHeader[:0], q.id...)
	q.headers = [...]kgo.RecordHeader{
		{Key: HeaderSource, Value: sourceValues[q.src]},
		{Key: HeaderReceivedAt, Value: strconv.AppendInt(q.received[:0], q.start.UnixMilli(), 10)},
		{Key: HeaderRequestID, Value: q.idHeader},
		tr.header(),
	}
	headers := q.headers[:]
	for i := range recs {
		env, ok := g.cfg.Routes.EnvBytes(recs[i].room)
		if !ok {
			g.fail(w, q, http.StatusUnprocessableEntity, fmt.Sprintf("room_id %q: no route matches it and there is no default environment", recs[i].room))
			return
		}
		envs[i] = g.envs[env]
		krecs[i] = kgo.Record{Topic: envs[i].topics[q.src], Key: recs[i].room, Value: recs[i].value, Headers: headers}
		ptrs[i] = &krecs[i]
	}
	tr.records(krecs)

	if err = q.produce(r.Context(), g.prod, ptrs, g.cfg.ProduceTimeout); err != nil {
		// The broker's error is logged, never sent: it names brokers,
		// topics and partitions, which are no business of the sender.
		code, msg := http.StatusServiceUnavailable, "the brokers did not acknowledge every record; nothing of this request is confirmed: retry all of it"
		if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
			code, msg = http.StatusRequestEntityTooLarge, "a record is larger than the brokers accept"
		} else {
			w.Header().Set("Retry-After", retryAfter)
		}
		g.cfg.Logger.Warn("gateway: produce failed", zap.String("request_id", q.id), zap.String("source", source),
			zap.Int("records", len(recs)), zap.Error(err))
		g.fail(w, q, code, msg)
		return
	}
	for i := range recs {
		s := envs[i].series[q.src]
		s.records.get().Inc()
		s.bytes.get().Add(float64(len(recs[i].value)))
	}
	g.sources[q.src].objects.get().Add(float64(len(objs)))

	out := append(q.out[:0], `{"accepted":`...)
	out = strconv.AppendInt(out, int64(len(objs)), 10)
	out = append(out, `,"records":`...)
	out = strconv.AppendInt(out, int64(len(recs)), 10)
	out = append(out, `,"request_id":"`...)
	out = append(out, q.id...) // [A-Za-z0-9._:@-] only (saneID, or made so): nothing to escape
	out = append(out, "\"}\n"...)
	q.out = out
	g.write(w, q, http.StatusAccepted, out)
}

// sourceValues are the rostrum-source header values, indexed as Sources,
// shared by every record (kgo and its hooks only read a header's value).
var sourceValues = func() [][]byte {
	var out [][]byte
	for _, s := range Sources {
		out = append(out, []byte(s))
	}
	return out
}()

// isJSON reports whether the Content-Type ct is application/json, with
// any parameters. The two usual forms are known without parsing.
func isJSON(ct string) bool {
	if ct == "application/json" || ct == "application/json; charset=utf-8" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

var errTooLarge = errors.New("body too large")

// busy answers 503: every slot of its kind is taken.
func (g *Gateway) busy(w http.ResponseWriter, q *request) {
	w.Header().Set("Retry-After", retryAfter)
	g.fail(w, q, http.StatusServiceUnavailable, fmt.Sprintf("too many pending requests (--max-inflight %d); retry later", g.cfg.MaxInflight))
}

// readBodyOrFail reads the body into q (readBody); when that fails it
// answers (413, 408 or 400) and returns false.
func (g *Gateway) readBodyOrFail(w http.ResponseWriter, r *http.Request, q *request) ([]byte, bool) {
	body, err := g.readBody(r, q)
	switch {
	case err == nil:
		return body, true
	case errors.Is(err, errTooLarge):
		g.fail(w, q, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes (--max-body-bytes)", g.cfg.MaxBodyBytes))
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		g.fail(w, q, http.StatusRequestTimeout, fmt.Sprintf("the body did not arrive within %s (--read-timeout)", g.cfg.ReadTimeout))
	default:
		g.fail(w, q, http.StatusBadRequest, "reading the body: "+err.Error())
	}
	return nil, false
}

// readBody reads the body into q's buffer, up to MaxBodyBytes.
func (g *Gateway) readBody(r *http.Request, q *request) ([]byte, error) {
	if r.ContentLength > g.cfg.MaxBodyBytes {
		return nil, errTooLarge
	}
	buf := q.body[:0]
	if r.ContentLength > int64(cap(buf)) {
		buf = make([]byte, 0, r.ContentLength)
	}
	limit := g.cfg.MaxBodyBytes + 1
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Body.Read(buf[len(buf):min(int64(cap(buf)), limit)])
		buf = buf[:len(buf)+n]
		q.body = buf
		if int64(len(buf)) > g.cfg.MaxBodyBytes {
			return nil, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// requestID returns the request's X-Request-Id when it is a sane id (1..64
// bytes of [A-Za-z0-9._:@-]), else a new one, with the header values to
// answer it with.
func (g *Gateway) requestID(r *http.Request) (string, []string) {
	if vs := r.Header["X-Request-Id"]; len(vs) > 0 {
		if v := vs[0]; v != "" && len(v) <= 64 && saneID(v) {
			return v, vs[:1:1]
		}
	}
	return g.ids.next()
}

func saneID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}

// fail answers with an RFC 9457 problem (internal/problem) carrying the
// request id.
func (g *Gateway) fail(w http.ResponseWriter, q *request, code int, msg string) {
	b := append(problem.Marshal(problem.New(code, problem.CodeFor(code), msg), map[string]any{"request_id": q.id}), '\n')
	w.Header().Set("Content-Type", problem.ContentType)
	// Debug only: a client that keeps sending a bad body must not flood
	// the log. Failed produces are logged once, at warn, by the caller.
	if ce := g.cfg.Logger.Check(zap.DebugLevel, "gateway: request refused"); ce != nil {
		ce.Write(zap.String("request_id", q.id), zap.String("source", sourceLabel(q.src)), zap.Int("code", code), zap.String("error", msg))
	}
	g.write(w, q, code, b)
}

// jsonType is the Content-Type header of a JSON answer. Header maps share
// it: net/http only reads a header's values, and a handler that changes
// one sets a slice of its own.
var jsonType = []string{"application/json"}

// write answers code with body.
func (g *Gateway) write(w http.ResponseWriter, q *request, code int, body []byte) {
	h := w.Header()
	if ct := h["Content-Type"]; len(ct) == 0 || ct[0] == "" {
		h["Content-Type"] = jsonType
	}
	h["X-Request-Id"] = q.idv
	w.WriteHeader(code)
	_, _ = w.Write(body)
	g.sources[q.src].answered(g.cfg.Metrics, code, time.Since(q.start))
}
