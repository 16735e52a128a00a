package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

const (
	testEnv      = "test"
	commandTopic = "test.recording.commands"
	layoutTopic  = "test.rooms.layout"
	testToken    = "s3cret-control-token"
)

// rig is a Service on a real redis-server and kfake, served over HTTP.
type rig struct {
	t     testing.TB
	redis *testenv.Redis
	kafka *testenv.Kafka
	rc    *redis.Client
	svc   *Service
	pr    *kgo.Client
	srv   *httptest.Server
}

// newRig starts the servers; opt adjusts the Service's options (its
// Env, topics, Tokens and Logger are set).
func newRig(t testing.TB, redisOpts []testenv.RedisOption, opt func(*Config)) *rig {
	t.Helper()
	r := &rig{t: t, redis: testenv.StartRedis(t, redisOpts...)}
	r.kafka = testenv.StartKafka(t, testenv.WithTopics(3, commandTopic, layoutTopic))
	r.rc = r.redis.Client()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("# control\n"+testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := kgo.NewClient(kgo.SeedBrokers(r.kafka.Seeds...), kgo.RecordDeliveryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pr.Close)
	r.pr = pr
	o := Config{Env: testEnv, CommandsTopic: commandTopic, LayoutTopic: layoutTopic, Tokens: tokens,
		ProduceTimeout: 5 * time.Second, Logger: zaptest.NewLogger(t)}
	if opt != nil {
		opt(&o)
	}
	if r.svc, err = New(r.rc, pr, o); err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(r.svc.Handler())
	t.Cleanup(r.srv.Close)
	return r
}

// reply is one HTTP answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (p reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(p.Body, &m); err != nil {
		t.Fatalf("answer %d is not a JSON object: %q", p.Status, p.Body)
	}
	return m
}

// do sends a request with the valid token unless headers set
// Authorization ("" removes it), and a write with Content-Type:
// application/json unless headers set it.
func (r *rig) do(method, path, body string, headers ...string) reply {
	r.t.Helper()
	return doHTTP(r.t, r.srv.URL, method, path, body, headers...)
}

func doHTTP(t testing.TB, base, method, path, body string, headers ...string) reply {
	t.Helper()
	p, err := send(base, method, path, body, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return p
}

func send(base, method, path, body string, headers ...string) (reply, error) {
	return sendWith(http.DefaultClient, base, method, path, body, headers...)
}

func sendWith(c *http.Client, base, method, path, body string, headers ...string) (reply, error) {
	req, err := http.NewRequest(method, base+path, bytes.NewBufferString(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if method == http.MethodPost || method == http.MethodPut {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// command is a record of the commands topic.
type command struct {
	RoomID      string          `json:"room_id"`
	Action      string          `json:"action"`
	RecordingID string          `json:"recording_id"`
	Token       int64           `json:"token"`
	By          string          `json:"by"`
	At          int64           `json:"at"`
	Params      json.RawMessage `json:"params"`
}

// commands returns the records of the commands topic, each checked for its
// key and headers.
func (r *rig) commands() []command {
	r.t.Helper()
	var out []command
	for _, rec := range r.kafka.ReadAll(commandTopic) {
		testenv.WantRecordKind(r.t, rec, "recording.command/1")
		var c command
		if err := json.Unmarshal(rec.Value, &c); err != nil {
			r.t.Fatalf("command record %q: %v", rec.Value, err)
		}
		if string(rec.Key) != c.RoomID {
			r.t.Fatalf("command record key %q, room %q", rec.Key, c.RoomID)
		}
		out = append(out, c)
	}
	return out
}

var errCrash = errors.New("simulated crash")
