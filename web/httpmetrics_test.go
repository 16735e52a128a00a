package web_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/metrics"
	"github.com/rostrumhq/rostrum/web"
)

// TestHTTPMetrics: the API's requests are counted by route pattern and code
// on the registry /metrics serves (metrics.Processor's handler), never by raw
// path; a path no route matches counts as "other"; an event stream counts
// when it opens and is not timed.
func TestHTTPMetrics(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource(), Metrics: metrics.New("test").Handler(),
		Interval: 10 * time.Millisecond})
	for path, want := range map[string]int{
		"/v1/rooms/r-1001/top":   200,
		"/v1/rooms/made-up/top":  404, // an unknown room: the route matched
		"/v1/no/such/route":      404,
		"/v1/rooms/r-1001/top?x": 200,
	} {
		if res, body := get(t, s, path); res.StatusCode != want {
			t.Fatalf("GET %s: %d, want %d\n%s", path, res.StatusCode, want, body)
		}
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/v1/events?room=r-1001")
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/events: %d %q %v", resp.StatusCode, line, err)
	}
	// The stream is open: it must already be counted.
	_, text := get(t, s, "/metrics")
	resp.Body.Close()

	var series []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "rostrum_http_") {
			series = append(series, l)
		}
	}
	has := func(prefix string, parts ...string) string {
		for _, l := range series {
			if !strings.HasPrefix(l, prefix+"{") {
				continue
			}
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(l, p)
			}
			if ok {
				return l
			}
		}
		return ""
	}
	for _, c := range []struct {
		name  string
		parts []string
		value string
	}{
		{"rostrum_http_requests_total", []string{`route="/v1/rooms/{room}/top"`, `code="200"`, `env="test"`}, " 2"},
		{"rostrum_http_requests_total", []string{`route="/v1/rooms/{room}/top"`, `code="404"`}, " 1"},
		{"rostrum_http_requests_total", []string{`route="other"`, `code="404"`}, " 1"},
		{"rostrum_http_requests_total", []string{`route="/v1/events"`, `code="200"`}, " 1"},
		{"rostrum_http_request_duration_seconds_count", []string{`route="/v1/rooms/{room}/top"`}, " 3"},
		{"rostrum_http_request_duration_seconds_count", []string{`route="other"`}, " 1"},
	} {
		l := has(c.name, c.parts...)
		if l == "" || !strings.HasSuffix(l, c.value) {
			t.Errorf("no %s with %v ending %q in:\n%s", c.name, c.parts, c.value, strings.Join(series, "\n"))
		}
	}
	if l := has("rostrum_http_request_duration_seconds_count", `route="/v1/events"`); l != "" {
		t.Errorf("event stream timed: %s", l)
	}
	for _, l := range series {
		if strings.Contains(l, "r-1001") || strings.Contains(l, "made-up") || strings.Contains(l, "/v1/no/such") {
			t.Errorf("raw path in a label: %s", l)
		}
	}
}

// TestHTTPMetricsRefused: a request the guard refuses before routing (here
// the rate limit's 429) still counts under the route it asked for.
func TestHTTPMetricsRefused(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource(), Metrics: metrics.New("").Handler(), RateLimit: 0.001, RateBurst: 1})
	if res, _ := get(t, s, "/v1/rooms/r-1001/top"); res.StatusCode != 200 {
		t.Fatalf("first request: %d", res.StatusCode)
	}
	if res, _ := get(t, s, "/v1/rooms/r-1001/top"); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second request: %d, want 429", res.StatusCode)
	}
	res, text := get(t, s, "/metrics") // not rate limited
	if res.StatusCode != 200 {
		t.Fatalf("/metrics: %d", res.StatusCode)
	}
	want := `rostrum_http_requests_total{code="429",route="/v1/rooms/{room}/top"} 1`
	if !strings.Contains(text, want) {
		t.Errorf("no %s in:\n%s", want, text)
	}
}
