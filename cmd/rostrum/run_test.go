package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/control"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
)

// ctlTopics are the control API's topics of the tests' environment, which
// `rostrum run` checks at start like the others.
var ctlTopics = control.TopicsFor("", "test")

// scrape sums the samples of a metric (all label sets) on /metrics.
func scrape(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	if !found {
		return -1
	}
	return sum
}

// TestRunMetricsAfterKnownLoad runs `rostrum run` against kfake and a real
// redis-server, feeds a known load, and checks the numbers on /metrics and
// the health endpoints.
func TestRunMetricsAfterKnownLoad(t *testing.T) {
	topics := processor.TopicsFor("", "test")
	k := testenv.StartKafka(t)
	createTopics(t, k, "test")
	r := testenv.StartRedis(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	admin := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	ts := time.Now().UnixMilli()
	const good, bad = 40, 7
	for i := 0; i < good; i++ {
		v := fmt.Sprintf(`[{"room_id":"r-%d","user_id":"u-%d","type":"volume","value":%d,"ts":%d},{"room_id":"r-%d","user_id":"u-%d","type":"audio","value":1,"ts":%d}]`,
			i%4, i, i*10, ts+int64(i), i%4, i, ts+int64(i))
		k.Produce(topics.RTC, []byte(fmt.Sprintf("r-%d", i%4)), []byte(v))
	}
	for i := 0; i < bad; i++ {
		k.Produce(topics.Client, []byte("r-0"), []byte(`{"room_id":"r-0","user_id":"u-1","type":"volume","value":1000,"ts":1}`))
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"run", "--brokers", k.Seeds[0], "--redis", r.Addr, "--env", "test",
			"--wal-dir", t.TempDir(), "--http", addr, "--admin-http", admin, "--lag-interval", "100ms", "--log-level", "error"}, io.Discard, io.Discard)
	}()
	base := "http://" + addr
	deadline := time.Now().Add(time.Minute)
	for scrape(t, base+"/metrics", "rostrum_records_consumed_total") < good+bad ||
		scrape(t, base+"/metrics", "rostrum_consumer_group_lag_records") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("load not consumed within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	m := base + "/metrics"
	for name, want := range map[string]float64{
		"rostrum_records_consumed_total":     good + bad,
		"rostrum_events_applied_total":       2 * good,
		"rostrum_dlq_records_total":          bad,
		"rostrum_outputs_published_total":    -2, // at least one; checked below
		"rostrum_consumer_group_lag_records": 0,
		"rostrum_assigned_partitions":        9,
	} {
		got := scrape(t, m, name)
		if want == -2 {
			if got < 4 {
				t.Errorf("%s = %v, want at least one per room (4)", name, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// The state cache holds the rooms' members, and every room apply went
	// through one of its paths.
	if got := scrape(t, m, "rostrum_state_cache_members"); got < 1 {
		t.Errorf("rostrum_state_cache_members = %v, want the members seen", got)
	}
	if got := scrape(t, m, "rostrum_state_cache_applies_total"); got < 4 {
		t.Errorf("rostrum_state_cache_applies_total = %v, want at least one apply per room (4)", got)
	}
	// Every output the load caused went through the publish latency, and
	// the build, the Redis pool and the Kafka client are on /metrics.
	if got := scrape(t, m, "rostrum_publish_latency_seconds_count"); got != scrape(t, m, "rostrum_outputs_published_total") {
		t.Errorf("rostrum_publish_latency_seconds_count = %v, want one per output published (%v)", got, scrape(t, m, "rostrum_outputs_published_total"))
	}
	for _, name := range []string{"rostrum_build_info", "rostrum_redis_pool_connections", "rostrum_redis_pool_hits_total", "kgo_connects_total", "kgo_fetch_records_total", "kgo_produce_records_total"} {
		if got := scrape(t, m, name); got < 1 {
			t.Errorf("%s = %v, want at least 1", name, got)
		}
	}
	// Profiles are served on the admin listener only, the command line
	// (flags may hold passwords) nowhere.
	for _, c := range []struct {
		url  string
		code int
	}{{"http://" + admin + "/debug/pprof/heap", 200}, {"http://" + admin + "/debug/pprof/cmdline", 404}, {base + "/debug/pprof/heap", 404}} {
		resp, err := http.Get(c.url)
		if err != nil || resp.StatusCode != c.code {
			t.Fatalf("%s: %v %v, want %d", c.url, resp, err, c.code)
		}
		resp.Body.Close()
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(base + "/v1/rooms/r-1/top")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	// Room r-1 holds u-1, u-5, …, u-37; volume grows with the number, so the
	// loudest seven are u-37 … u-13.
	if resp.StatusCode != 200 || !strings.Contains(body.String(), `"stable":[{"user_id":"u-37"`) {
		t.Fatalf("/v1/rooms/r-1/top: %d %s", resp.StatusCode, body.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run did not stop cleanly: %v", err)
	}
}
