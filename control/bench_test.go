package control

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
)

// BenchmarkControl measures the control API over HTTP (real redis-server,
// in-process kfake; every write waits for Kafka's acknowledgement): for
// start/stop, layout PUT and layout GET, the requests per second flat out
// (16 clients in a loop) and the p50/p99 latency then, and the p99 at half
// that rate (requests sent on a fixed schedule, latency measured from the
// scheduled time, so queueing counts). Run it alone, once:
//
//	go test ./control -run '^$' -bench Control -benchtime 1x
func BenchmarkControl(b *testing.B) {
	const (
		clients  = 16
		poolSize = 64 // workers of the half-rate run
		window   = 4 * time.Second
	)
	for _, op := range []string{"start-stop", "layout-put", "layout-get"} {
		b.Run(op, func(b *testing.B) {
			r := newRig(b, nil, func(o *Config) { o.Logger = zap.NewNop() })
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
			var seq atomic.Int64
			// One request to room; each room belongs to one goroutine, so
			// that its starts and stops alternate and every one wins.
			started := make([]bool, 256)
			req := func(room int) error {
				name := fmt.Sprintf("bench-%d", room)
				var method, path, body string
				switch op {
				case "start-stop":
					method, path, body = "POST", "/v1/rooms/"+name+"/recording/start", `{"by":"u-1","params":{"res":"1080p"}}`
					if started[room] {
						path, body = "/v1/rooms/"+name+"/recording/stop", `{"by":"u-2"}`
					}
					started[room] = !started[room]
				case "layout-put":
					method, path, body = "PUT", "/v1/rooms/"+name+"/layout", fmt.Sprintf(`{"tiles":9,"resolution":"1920x1080","seq":%d}`, seq.Add(1))
				case "layout-get":
					method, path = "GET", "/v1/rooms/"+name+"/layout"
				}
				p, err := sendWith(client, r.srv.URL, method, path, body)
				if err == nil && p.Status >= 300 {
					err = fmt.Errorf("%s %s: %d %s", method, path, p.Status, p.Body)
				}
				return err
			}
			if op == "layout-get" {
				for room := range 256 {
					if _, err := sendWith(client, r.srv.URL, "PUT", fmt.Sprintf("/v1/rooms/bench-%d/layout", room), `{"tiles":9}`); err != nil {
						b.Fatal(err)
					}
				}
			}

			// Flat out: each client in a loop on its own room.
			lat := make([][]time.Duration, clients)
			var errs atomic.Int64
			end := time.Now().Add(window)
			var wg sync.WaitGroup
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(end) {
						t0 := time.Now()
						if err := req(c); err != nil {
							errs.Add(1)
							continue
						}
						lat[c] = append(lat[c], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			all := slices.Concat(lat...)
			rate := float64(len(all)) / window.Seconds()
			p50, p99 := pct(all, 50), pct(all, 99)

			// Half the rate, open loop: a dispatcher hands out scheduled
			// times; a pool of workers (each on its own room) serves them,
			// and a request waiting for a free worker counts as latency.
			half := rate / 2
			n := int(window.Seconds() * half)
			sched := make(chan time.Time, n)
			hl := make([][]time.Duration, poolSize)
			for w := range poolSize {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for at := range sched {
						if err := req(clients + w); err != nil {
							errs.Add(1)
						}
						hl[w] = append(hl[w], time.Since(at))
					}
				}()
			}
			begin := time.Now()
			for i := range n {
				at := begin.Add(time.Duration(float64(i) * float64(time.Second) / half))
				time.Sleep(time.Until(at))
				sched <- at
			}
			close(sched)
			wg.Wait()
			if e := errs.Load(); e > 0 {
				b.Fatalf("%d requests failed", e)
			}
			b.ReportMetric(rate, "req/s")
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(pct(slices.Concat(hl...), 99).Microseconds())/1000, "half-rate-p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}
