package gateway_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/gateway"
)

// TestGatewayNo2xxWithoutAck sends thousands of requests while the broker
// fails a share of produce requests, some before writing (a non-retriable
// error, and a retriable one that may outlast the produce timeout) and some
// after (NOT_ENOUGH_REPLICAS_AFTER_APPEND: written, yet answered with an
// error). Every request answered 2xx must have all its records in the
// topics; requests answered with an error may or may not.
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

	const requests, workers = 2000, 16
	type sent struct {
		code int
		want map[string]string // topic/key → value each record must have
	}
	results := make([]sent, requests)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				var body string
				want := map[string]string{}
				if n%3 == 0 { // an array over two rooms
					a := fmt.Sprintf(`{"room_id":"p-%d","user_id":"u-%d","i":0}`, n%7, n)
					b := fmt.Sprintf(`{"room_id":"g-%d","user_id":"u-%d","i":1}`, n%5, n)
					c := fmt.Sprintf(`{"room_id":"p-%d","user_id":"u-%d","i":2}`, n%7, n)
					body = "[" + a + "," + b + "," + c + "]"
					want[fmt.Sprintf("prod.callbacks.rtc/p-%d", n%7)] = "[" + a + "," + c + "]"
					want[fmt.Sprintf("gray.callbacks.rtc/g-%d", n%5)] = "[" + b + "]"
				} else {
					body = fmt.Sprintf(`{"room_id":"p-%d","user_id":"u-%d"}`, n%11, n)
					want[fmt.Sprintf("prod.callbacks.rtc/p-%d", n%11)] = body
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
	for n := 0; n < requests; n++ {
		next <- n
	}
	close(next)
	wg.Wait()

	have := map[string]bool{} // topic/key/value
	for _, topic := range []string{"prod.callbacks.rtc", "gray.callbacks.rtc"} {
		for _, rec := range r.kafka.ReadAll(topic) {
			have[topic+"/"+string(rec.Key)+"/"+string(rec.Value)] = true
		}
	}
	counts := map[int]int{}
	for n, s := range results {
		counts[s.code]++
		if s.code < 200 || s.code > 299 {
			continue
		}
		for tk, v := range s.want {
			if !have[tk+"/"+v] {
				t.Errorf("request %d answered %d, but its record %s %s is not in the topic", n, s.code, tk, v)
			}
		}
	}
	t.Logf("answers: %v", counts)
	if counts[http.StatusAccepted] == 0 || counts[http.StatusServiceUnavailable] == 0 {
		t.Fatalf("want both 202s and 503s under faults, got %v", counts)
	}
	for code := range counts {
		if code != http.StatusAccepted && code != http.StatusServiceUnavailable {
			t.Errorf("unexpected answer %d (%d times)", code, counts[code])
		}
	}
}
