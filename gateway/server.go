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
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	sem       chan struct{}                // one slot per pending callback request whose credentials were checked
	verifying chan struct{}                // one slot per signed request reading its body to check the signature
	topics    map[string]map[string]string // env → source → topic
	idBase    string                       // random per process; request ids are idBase-counter
	idSeq     atomic.Uint64
	bufs      sync.Pool // *[]byte body buffers
	open      bool      // no credential and Insecure: every request passes
	prod      producer  // cfg.Client
}

// producer is what the callback endpoint needs of its Kafka client
// (Config.Client). The package's benchmarks put in one that writes
// nothing, to measure the gateway's own cost apart from kgo's and a
// broker's.
type producer interface {
	ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults
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
		topics: map[string]map[string]string{}, prod: cfg.Client}
	for _, env := range cfg.Routes.Envs() {
		g.topics[env] = map[string]string{}
		for _, s := range Sources {
			g.topics[env][s] = Topic(cfg.TopicPrefix, env, s)
		}
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	g.idBase = hex.EncodeToString(b[:])
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
// handler's) into one.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	problem.Handler(http.HandlerFunc(g.route)).ServeHTTP(w, r)
}

func (g *Gateway) route(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, CallbackPath):
		g.callback(w, r, p[len(CallbackPath):])
	case p == "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	case p == "/readyz":
		g.ready(w, r)
	case p == "/metrics":
		g.cfg.Metrics.Handler().ServeHTTP(w, r)
	default:
		g.fail(w, g.requestID(r), "other", time.Now(), http.StatusNotFound, "no such endpoint: callbacks go to POST "+CallbackPath+"{rtc|client|signal}")
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
	start := time.Now()
	id := g.requestID(r)
	tr := g.startTrace(r, source, id)
	defer tr.end()
	// Every answer before the body is read closes the connection, so that
	// a body that never comes holds nothing.
	if !validSource(source) {
		w.Header().Set("Connection", "close")
		g.fail(w, id, "other", start, http.StatusNotFound, fmt.Sprintf("unknown source %q: the sources are rtc, client and signal", source))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Connection", "close")
		w.Header().Set("Allow", http.MethodPost)
		g.fail(w, id, source, start, http.StatusMethodNotAllowed, "callbacks are POSTed")
		return
	}
	// The headers first: a request without a credential they can vouch
	// for is refused before it takes a slot or sends its body.
	verdict, why := g.checkHeaders(r, start)
	if verdict == refused {
		w.Header().Set("Connection", "close")
		g.fail(w, id, source, start, http.StatusUnauthorized, why)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		w.Header().Set("Connection", "close")
		g.fail(w, id, source, start, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type must be application/json, got %q", r.Header.Get("Content-Type")))
		return
	}
	// Every request gets a deadline for its body, whatever server runs the
	// handler (Serve sets the same one for the whole request).
	_ = http.NewResponseController(w).SetReadDeadline(start.Add(g.cfg.ReadTimeout))

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
			g.busy(w, id, source, start)
			return
		}
		g.cfg.Metrics.verify.Inc()
		bufp, b, ok := g.readBodyOrFail(w, r, id, source, start)
		if bufp != nil {
			defer g.bufs.Put(bufp)
		}
		verified := ok && g.verifySignature(r, b)
		g.cfg.Metrics.verify.Dec()
		<-g.verifying
		if !ok { // answered
			return
		}
		if !verified {
			g.fail(w, id, source, start, http.StatusUnauthorized, "invalid signature in "+g.cfg.SignatureHeader)
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
		g.busy(w, id, source, start)
		return
	}
	g.cfg.Metrics.inflight.Inc()
	defer g.cfg.Metrics.inflight.Dec()
	if !read {
		bufp, b, ok := g.readBodyOrFail(w, r, id, source, start)
		if bufp != nil {
			defer g.bufs.Put(bufp)
		}
		if !ok {
			return
		}
		body = b
	}

	objs, array, err := Parse(body)
	if err != nil {
		g.fail(w, id, source, start, http.StatusBadRequest, err.Error())
		return
	}
	recs := Split(objs, array)
	krecs := make([]kgo.Record, len(recs))
	ptrs := make([]*kgo.Record, len(recs))
	envs := make([]string, len(recs))
	received := []byte(strconv.FormatInt(start.UnixMilli(), 10))
	headers := []kgo.RecordHeader{
		{Key: HeaderSource, Value: []byte(source)},
		{Key: HeaderReceivedAt, Value: received},
		{Key: HeaderRequestID, Value: []byte(id)},
		tr.header(),
	}
	for i := range recs {
		env, ok := g.cfg.Routes.Env(recs[i].Room)
		if !ok {
			g.fail(w, id, source, start, http.StatusUnprocessableEntity, fmt.Sprintf("room_id %q: no route matches it and there is no default environment", recs[i].Room))
			return
		}
		envs[i] = env
		krecs[i] = kgo.Record{Topic: g.topics[env][source], Key: []byte(recs[i].Room), Value: recs[i].Value, Headers: headers}
		ptrs[i] = &krecs[i]
	}
	tr.records(krecs)

	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.ProduceTimeout)
	err = g.prod.ProduceSync(ctx, ptrs...).FirstErr()
	cancel()
	if err != nil {
		// The broker's error is logged, never sent: it names brokers,
		// topics and partitions, which are no business of the sender.
		code, msg := http.StatusServiceUnavailable, "the brokers did not acknowledge every record; nothing of this request is confirmed: retry all of it"
		if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
			code, msg = http.StatusRequestEntityTooLarge, "a record is larger than the brokers accept"
		} else {
			w.Header().Set("Retry-After", retryAfter)
		}
		g.cfg.Logger.Warn("gateway: produce failed", zap.String("request_id", id), zap.String("source", source),
			zap.Int("records", len(recs)), zap.Error(err))
		g.fail(w, id, source, start, code, msg)
		return
	}
	for i := range recs {
		g.cfg.Metrics.records.WithLabelValues(envs[i], source).Inc()
		g.cfg.Metrics.bytes.WithLabelValues(envs[i], source).Add(float64(len(recs[i].Value)))
	}
	g.cfg.Metrics.objects.WithLabelValues(source).Add(float64(len(objs)))

	out := make([]byte, 0, 96)
	out = append(out, `{"accepted":`...)
	out = strconv.AppendInt(out, int64(len(objs)), 10)
	out = append(out, `,"records":`...)
	out = strconv.AppendInt(out, int64(len(recs)), 10)
	out = append(out, `,"request_id":`...)
	out = strconv.AppendQuote(out, id)
	out = append(out, "}\n"...)
	g.write(w, id, source, start, http.StatusAccepted, out)
}

var errTooLarge = errors.New("body too large")

// busy answers 503: every slot of its kind is taken.
func (g *Gateway) busy(w http.ResponseWriter, id, source string, start time.Time) {
	w.Header().Set("Retry-After", retryAfter)
	g.fail(w, id, source, start, http.StatusServiceUnavailable, fmt.Sprintf("too many pending requests (--max-inflight %d); retry later", g.cfg.MaxInflight))
}

// readBodyOrFail reads the body (readBody); when that fails it answers
// (413, 408 or 400) and returns false. The buffer, when not nil, goes back
// to the pool once the body is no longer needed.
func (g *Gateway) readBodyOrFail(w http.ResponseWriter, r *http.Request, id, source string, start time.Time) (*[]byte, []byte, bool) {
	bufp, body, err := g.readBody(r)
	switch {
	case err == nil:
		return bufp, body, true
	case errors.Is(err, errTooLarge):
		g.fail(w, id, source, start, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes (--max-body-bytes)", g.cfg.MaxBodyBytes))
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		g.fail(w, id, source, start, http.StatusRequestTimeout, fmt.Sprintf("the body did not arrive within %s (--read-timeout)", g.cfg.ReadTimeout))
	default:
		g.fail(w, id, source, start, http.StatusBadRequest, "reading the body: "+err.Error())
	}
	return bufp, nil, false
}

// readBody reads the body into a pooled buffer, up to MaxBodyBytes.
func (g *Gateway) readBody(r *http.Request) (*[]byte, []byte, error) {
	if r.ContentLength > g.cfg.MaxBodyBytes {
		return nil, nil, errTooLarge
	}
	bufp, _ := g.bufs.Get().(*[]byte)
	if bufp == nil {
		b := make([]byte, 0, 4096)
		bufp = &b
	}
	buf := (*bufp)[:0]
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
		*bufp = buf
		if int64(len(buf)) > g.cfg.MaxBodyBytes {
			return bufp, nil, errTooLarge
		}
		if err == io.EOF {
			return bufp, buf, nil
		}
		if err != nil {
			return bufp, nil, err
		}
	}
}

// requestID returns the request's X-Request-Id when it is a sane id (1..64
// bytes of [A-Za-z0-9._:@-]), else a new one.
func (g *Gateway) requestID(r *http.Request) string {
	if v := r.Header.Get("X-Request-Id"); v != "" && len(v) <= 64 && saneID(v) {
		return v
	}
	return g.idBase + "-" + strconv.FormatUint(g.idSeq.Add(1), 36)
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
func (g *Gateway) fail(w http.ResponseWriter, id, source string, start time.Time, code int, msg string) {
	b := append(problem.Marshal(problem.New(code, problem.CodeFor(code), msg), map[string]any{"request_id": id}), '\n')
	w.Header().Set("Content-Type", problem.ContentType)
	// Debug only: a client that keeps sending a bad body must not flood
	// the log. Failed produces are logged once, at warn, by the caller.
	g.cfg.Logger.Debug("gateway: request refused", zap.String("request_id", id), zap.String("source", source), zap.Int("code", code), zap.String("error", msg))
	g.write(w, id, source, start, code, b)
}

func (g *Gateway) write(w http.ResponseWriter, id, source string, start time.Time, code int, body []byte) {
	h := w.Header()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	h.Set("X-Request-Id", id)
	w.WriteHeader(code)
	_, _ = w.Write(body)
	g.cfg.Metrics.requests.WithLabelValues(source, codeLabel(code)).Inc()
	g.cfg.Metrics.latency.WithLabelValues(source).Observe(time.Since(start).Seconds())
}
