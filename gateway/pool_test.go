package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rostrumhq/rostrum/gateway"
	"github.com/rostrumhq/rostrum/internal/traceparent"
)

// TestGatewayPooledRequestsLeakNothing: the gateway keeps each callback's
// body, objects, records and headers in scratch space it reuses for the
// next callbacks. Nothing of one request may show in another's records:
// requests of every shape (large and small bodies, arrays and single
// objects, with and without a traceparent or a request id, refused ones)
// follow each other, then run at once, and every record in the topics must
// be exactly what its own request makes of its own body.
func TestGatewayPooledRequestsLeakNothing(t *testing.T) {
	r := newRig(t, "test")
	type want struct {
		topic, key, value, source, traceparent string // traceparent "": a new one
	}
	type sent struct {
		source, body, id, tp string // id, tp "": none sent
		code                 int
		recs                 []want
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	shapes := func(n int) []sent {
		secret := strings.Repeat(fmt.Sprintf("S%d-", n), 150) // large, and unlike any other request's
		big := fmt.Sprintf(`[{"room_id":"p-%d","secret":"%s"},{"room_id":"g-%d","u":1},{"room_id":"p-%d","u":2}]`, n, secret, n, n)
		one := fmt.Sprintf(`{"room_id":"p-%d","u":3}`, n)
		return []sent{
			{source: "rtc", body: big, id: fmt.Sprintf("big-%d", n), tp: tp, code: 202, recs: []want{
				{"prod.callbacks.rtc", fmt.Sprintf("p-%d", n), fmt.Sprintf(`[{"room_id":"p-%d","secret":"%s"},{"room_id":"p-%d","u":2}]`, n, secret, n), "rtc", tp},
				{"gray.callbacks.rtc", fmt.Sprintf("g-%d", n), fmt.Sprintf(`[{"room_id":"g-%d","u":1}]`, n), "rtc", tp},
			}},
			{source: "client", body: one, code: 202, recs: []want{{"prod.callbacks.client", fmt.Sprintf("p-%d", n), one, "client", ""}}},
			{source: "rtc", body: fmt.Sprintf(`[{"room_id":"p-%d","x":"%s"},{"room_id":"bad id"}]`, n, secret), id: fmt.Sprintf("bad-%d", n), code: 400},
			{source: "signal", body: fmt.Sprintf(`[{"room_id":"x-%d"}]`, n), id: fmt.Sprintf("one-%d", n), code: 202, recs: []want{
				{"test.callbacks.signal", fmt.Sprintf("x-%d", n), fmt.Sprintf(`[{"room_id":"x-%d"}]`, n), "signal", ""},
			}},
			{source: "rtc", body: fmt.Sprintf(`{"room_id":"p\u002d%d"}`, n), tp: "00-zz", code: 202, recs: []want{ // an invalid traceparent: a new one
				{"prod.callbacks.rtc", fmt.Sprintf("p-%d", n), fmt.Sprintf(`{"room_id":"p\u002d%d"}`, n), "rtc", ""},
			}},
		}
	}
	post := func(s sent) (code int, id string, err error) {
		req, err := http.NewRequest(http.MethodPost, r.srv.URL+gateway.CallbackPath+s.source, strings.NewReader(s.body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", "application/json")
		if s.id != "" {
			req.Header.Set("X-Request-Id", s.id)
		}
		if s.tp != "" {
			req.Header.Set("traceparent", s.tp)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var a struct {
			ID string `json:"request_id"`
		}
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &a); err != nil {
			return 0, "", fmt.Errorf("answer %d %q: %w", resp.StatusCode, raw, err)
		}
		return resp.StatusCode, a.ID, nil
	}

	byID := map[string]sent{} // the requests answered, by their request id
	var mu sync.Mutex
	check := func(s sent) error {
		code, id, err := post(s)
		if err != nil {
			return err
		}
		if code != s.code || s.id != "" && id != s.id {
			return fmt.Errorf("%s %q: answer %d id %q, want %d id %q", s.source, s.body, code, id, s.code, s.id)
		}
		mu.Lock()
		defer mu.Unlock()
		if _, dup := byID[id]; dup {
			return fmt.Errorf("request id %q answered twice", id)
		}
		byID[id] = s
		return nil
	}
	// One after another, so each takes the scratch space of the one before.
	for n := range 10 {
		for _, s := range shapes(n) {
			if err := check(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	// At once.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 10 {
				for _, s := range shapes(100 + 10*w + n) {
					if err := check(s); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	got := map[string][]want{} // records by request id
	for _, topic := range allTopics("prod", "gray", "test") {
		for _, rec := range r.kafka.ReadAll(topic) {
			id := header(rec, gateway.HeaderRequestID)
			got[id] = append(got[id], want{topic, string(rec.Key), string(rec.Value), header(rec, gateway.HeaderSource), header(rec, traceparent.Header)})
		}
	}
	newTraces := map[string]string{}
	for id, s := range byID {
		recs := got[id]
		delete(got, id)
		if len(recs) != len(s.recs) {
			t.Errorf("request %s (%s %q): %d records, want %d: %q", id, s.source, s.body, len(recs), len(s.recs), recs)
			continue
		}
		slices.SortFunc(recs, func(a, b want) int { return strings.Compare(a.topic, b.topic) })
		w := slices.Clone(s.recs)
		slices.SortFunc(w, func(a, b want) int { return strings.Compare(a.topic, b.topic) })
		for i := range recs {
			if w[i].traceparent == "" { // a new trace: valid, not the request's, not another request's
				if _, ok := traceparent.Parse([]byte(recs[i].traceparent)); !ok || recs[i].traceparent == tp {
					t.Errorf("request %s: traceparent %q, want a new one", id, recs[i].traceparent)
				}
				if other, dup := newTraces[recs[i].traceparent]; dup && other != id {
					t.Errorf("requests %s and %s: the same new traceparent %q", other, id, recs[i].traceparent)
				}
				newTraces[recs[i].traceparent] = id
				w[i].traceparent = recs[i].traceparent
			}
			if recs[i] != w[i] {
				t.Errorf("request %s record %d:\n%+v\nwant\n%+v", id, i, recs[i], w[i])
			}
		}
	}
	for id, recs := range got {
		t.Errorf("records of no answered request (id %q): %q", id, recs)
	}
}
