package soak

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Driver posts the source's records to a gateway, one request per record,
// from a number of concurrent clients, flat out or at a fixed rate.
type Driver struct {
	src  *Source
	base string // http://host:port of the gateway
	cl   *http.Client
	next atomic.Int64 // the next record to send

	Requests atomic.Int64 // HTTP requests sent
	OK       atomic.Int64 // answered 2xx
	Refused  atomic.Int64 // answered 4xx
	Failed   atomic.Int64 // answered 5xx or not at all (then retried)
}

// NewDriver returns a driver of src's records to the gateway at addr.
func NewDriver(src *Source, addr string, conns int) *Driver {
	return &Driver{src: src, base: "http://" + addr,
		cl: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}}
}

// Sent returns how many records were handed out so far.
func (d *Driver) Sent() int { return int(d.next.Load()) }

// Run sends records from clients goroutines until ctx ends, each record
// until it is answered 2xx or 4xx (a 5xx, a 429 or a transport error is
// retried after 200 ms, as a callback sender retries), and returns the
// number of records answered 2xx. With rate > 0 record n of this call is
// not sent before its turn, start + n/rate; a client that falls behind
// sends at once, so the offered load catches up after a stall instead of
// being lost.
func (d *Driver) Run(ctx context.Context, clients int, rate float64) int64 {
	start, first := time.Now(), d.next.Load()
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := d.next.Add(1) - 1
				if rate > 0 {
					at := start.Add(time.Duration(float64(i-first) / rate * float64(time.Second)))
					if w := time.Until(at); w > 0 {
						select {
						case <-ctx.Done():
							return // never sent: Reconcile leaves it out
						case <-time.After(w):
						}
					}
				}
				if d.send(ctx, int(i)) {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return ok.Load()
}

// send posts record i until it is answered 2xx or 4xx, or ctx ends; it
// reports a 2xx answer.
func (d *Driver) send(ctx context.Context, i int) bool {
	for {
		r := d.src.Get(i)
		req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, d.base+"/v1/callbacks/"+r.Topic, bytes.NewReader(r.Value))
		if err != nil {
			d.src.Done(i, refused)
			return false
		}
		req.Header.Set("Content-Type", "application/json")
		d.Requests.Add(1)
		resp, err := d.cl.Do(req)
		status := 0
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		}
		switch {
		case status >= 200 && status < 300:
			d.OK.Add(1)
			d.src.Done(i, accepted)
			return true
		case status >= 400 && status < 500 && status != http.StatusTooManyRequests:
			d.Refused.Add(1)
			d.src.Done(i, refused)
			return false
		}
		d.Failed.Add(1)
		select {
		case <-ctx.Done():
			return false // left pending: not required in the topics
		case <-time.After(200 * time.Millisecond):
		}
	}
}
