package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/gateway"
	"github.com/rostrumhq/rostrum/internal/problem"
)

// TestGatewayNo2xxWithoutAck has concurrent clients post thousands of
// requests while the broker fails a share of produce requests, some before
// writing (a non-retriable error, and a retriable one that may outlast the
// produce timeout) and some after (NOT_ENOUGH_REPLICAS_AFTER_APPEND:
// written, yet answered with an error), and holds back others for up to
// 300 ms. Every request answered 2xx must have all its records in the
// topics; requests answered with an error may or may not. Each client owns
// two rooms and sends its requests one after the other, so the records of
// its 2xx answers must also be in each room's partition in the order they
// were answered: a record of an earlier 2xx answer is never first found
// after one of a later answer (a failed request that landed after all may
// be anywhere, and a repeat is allowed).
func TestGatewayNo2xxWithoutAck(t *testing.T) {
	r := newRig(t, "test", func(c *gateway.Config) {
		c.ProduceTimeout = 1500 * time.Millisecond
		c.Logger = zap.NewNop() // thousands of failed produces
	})
	r.kafka.Fault(
		kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Count: -1, Err: kerr.InvalidRecord,
			When: func(kmsg.Request) bool { return rand.IntN(100) < 4 }},
		kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Count: -1, Err: kerr.NotEnoughReplicasAfterAppend,
			When: func(kmsg.Request) bool { return rand.IntN(100) < 4 }},
		kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Count: -1, Err: kerr.NotLeaderForPartition,
			When: func(kmsg.Request) bool { return rand.IntN(100) < 4 }},
	)
	// Delays: one produce request in ten waits 50–300 ms before the broker
	// handles it, so that the requests of different clients overtake each
	// other.
	fake := r.kafka.Fake()
	var delayed atomic.Int64
	var stop atomic.Bool
	fake.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if stop.Load() {
			fake.DropControl()
			return nil, nil, false
		}
		if rand.IntN(10) == 0 {
			delayed.Add(1)
			d := time.Duration(50+rand.IntN(250)) * time.Millisecond
			fake.SleepControl(func() { time.Sleep(d) })
		}
		return nil, nil, false // then handled as usual (and maybe faulted)
	})

	const requests, workers = 2000, 16
	type part struct{ topicKey, value string }
	type sent struct {
		code int
		want []part // topic/key and value of each record
	}
	results := make([]sent, requests)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Client w owns rooms p-w (prod) and g-w (gray) and sends
			// requests w, w+workers, … in turn.
			for n := w; n < requests; n += workers {
				var body string
				var want []part
				if n%3 == 0 { // an array over two rooms
					a := fmt.Sprintf(`{"room_id":"p-%d","user_id":"u-%d","seq":%d,"i":0}`, w, n, n)
					b := fmt.Sprintf(`{"room_id":"g-%d","user_id":"u-%d","seq":%d,"i":1}`, w, n, n)
					c := fmt.Sprintf(`{"room_id":"p-%d","user_id":"u-%d","seq":%d,"i":2}`, w, n, n)
					body = "[" + a + "," + b + "," + c + "]"
					want = []part{{fmt.Sprintf("prod.callbacks.rtc/p-%d", w), "[" + a + "," + c + "]"},
						{fmt.Sprintf("gray.callbacks.rtc/g-%d", w), "[" + b + "]"}}
				} else {
					body = fmt.Sprintf(`{"room_id":"p-%d","user_id":"u-%d","seq":%d}`, w, n, n)
					want = []part{{fmt.Sprintf("prod.callbacks.rtc/p-%d", w), body}}
				}
				req, _ := http.NewRequest(http.MethodPost, r.srv.URL+"/v1/callbacks/rtc", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				code := 0
				if err == nil {
					code = resp.StatusCode
					resp.Body.Close()
				}
				results[n] = sent{code, want}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)

	// Each room's records in partition order (ReadAll: by partition, then
	// offset; a room is one key, so one partition).
	order := map[string][]string{} // topic/key → values in offset order
	have := map[string]bool{}      // topic/key/value
	for _, topic := range []string{"prod.callbacks.rtc", "gray.callbacks.rtc"} {
		for _, rec := range r.kafka.ReadAll(topic) {
			tk := topic + "/" + string(rec.Key)
			order[tk] = append(order[tk], string(rec.Value))
			have[tk+"/"+string(rec.Value)] = true
		}
	}
	counts := map[int]int{}
	rank := map[string]int{} // topic/key/value of a 2xx record → its request
	for n, s := range results {
		counts[s.code]++
		if s.code < 200 || s.code > 299 {
			continue
		}
		for _, p := range s.want {
			rank[p.topicKey+"/"+p.value] = n
			if !have[p.topicKey+"/"+p.value] {
				t.Errorf("request %d answered %d, but its record %s %s is not in the topic", n, s.code, p.topicKey, p.value)
			}
		}
	}
	checked := 0
	for tk, values := range order {
		last, seen := -1, map[string]bool{}
		for _, v := range values {
			n, ok := rank[tk+"/"+v]
			if !ok || seen[v] {
				continue // a failed request's record, or a repeat
			}
			seen[v] = true
			if n < last {
				t.Errorf("%s: the record of 2xx request %d is after that of 2xx request %d", tk, n, last)
			}
			last = n
			checked++
		}
	}
	t.Logf("answers: %v; %d produce requests delayed; %d records of 2xx answers checked in order", counts, delayed.Load(), checked)
	if counts[http.StatusAccepted] == 0 || counts[http.StatusServiceUnavailable] == 0 || delayed.Load() == 0 {
		t.Fatalf("want both 202s and 503s under faults, and delayed produces, got %v and %d delayed", counts, delayed.Load())
	}
	for code := range counts {
		if code != http.StatusAccepted && code != http.StatusServiceUnavailable {
			t.Errorf("unexpected answer %d (%d times)", code, counts[code])
		}
	}
}

// TestGateway503CarriesNoKafkaError: when the brokers refuse the records,
// the answer says so without the broker's error text (it is logged).
func TestGateway503CarriesNoKafkaError(t *testing.T) {
	r := newRig(t, "test", func(c *gateway.Config) { c.ProduceTimeout = 2 * time.Second })
	r.kafka.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Count: -1, Err: kerr.InvalidRecord})
	a := r.post(t, "rtc", "application/json", `{"room_id":"p-1"}`)
	wantError(t, a, http.StatusServiceUnavailable, "nothing of this request is confirmed")
	for _, leak := range []string{"INVALID_RECORD", kerr.InvalidRecord.Description, "callbacks.rtc"} {
		if strings.Contains(a.raw, leak) {
			t.Errorf("the 503 carries %q: %s", leak, a.raw)
		}
	}
}

// TestGatewayReadyzNotReady: with the brokers gone /readyz answers a 503
// problem naming the class ("kafka"), never the client's error text.
func TestGatewayReadyzNotReady(t *testing.T) {
	r := newRig(t, "test")
	r.kafka.Fake().Close()
	resp, err := http.Get(r.srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != problem.ContentType {
		t.Fatalf("/readyz with no broker: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var p struct{ Code, Reason string }
	if err := json.Unmarshal(b, &p); err != nil || p.Code != problem.Unavailable || p.Reason != "kafka" {
		t.Fatalf("/readyz body %s (%v)", b, err)
	}
	for _, leak := range []string{"dial", "127.0.0.1", "connection refused"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("/readyz sends the error text (%q): %s", leak, b)
		}
	}
}

// TestGatewayUnknownRouteIsProblem: unknown paths and sources answer
// problems.
func TestGatewayUnknownRouteIsProblem(t *testing.T) {
	r := newRig(t, "test")
	for _, path := range []string{"/nope", "/v1/callbacks/nope"} {
		resp, err := http.Get(r.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != problem.ContentType {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}

// TestGatewayShutdownTimeout: once Serve's context ends, a request still
// in flight (here a body that never finishes) is cut after
// Config.ShutdownTimeout, so a SIGTERM stops the gateway within about
// --shutdown-timeout whatever its clients do. The guard (5 s) is below the
// read timeout (10 s) that would otherwise end the request.
func TestGatewayShutdownTimeout(t *testing.T) {
	r := newRig(t, "test", func(c *gateway.Config) { c.ShutdownTimeout = 200 * time.Millisecond })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.gw.Serve(ctx, ln, nil) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "POST /v1/callbacks/rtc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	for deadline := time.Now().Add(time.Minute); !strings.Contains(r.get(t, "/metrics"), "\nrostrum_gateway_inflight_requests 1\n"); {
		if time.Now().After(deadline) {
			t.Fatal("the request never took its slot")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still running 5 s after its context ended, with a 200 ms shutdown timeout")
	}
}
