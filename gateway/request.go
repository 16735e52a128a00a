package gateway

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// request is the scratch space of one callback request: its body, its
// objects and records, the records' headers and its answer. Requests are
// pooled (Gateway.reqs), so that a callback allocates next to nothing of
// its own.
//
// A request is taken when the callback starts and put back when it ends,
// after its answer is written. By then nothing else holds its memory:
// produce returns only once every record's promise has run, after which
// kgo no longer touches the record; the ResponseWriter copied the answer;
// the span, if any, has ended. Everything a request fills is
// cut to length or overwritten before it is read, so nothing of one
// request can reach the next (TestGatewayPooledRequestsLeakNothing).
type request struct {
	start time.Time // when it arrived
	id    string    // its request id
	idv   []string  // X-Request-Id's values to answer with: id alone
	src   int       // the index of its source label (sourceIndex)

	body  []byte
	objs  []object
	split splitter
	krecs []kgo.Record
	ptrs  []*kgo.Record
	envs  []*envRoute // the environment of each record

	headers  [4]kgo.RecordHeader // the headers every record of the request carries
	received [20]byte            // rostrum-received-at's value
	idHeader []byte              // rostrum-request-id's value
	tp       []byte              // traceparent's value, without a tracer
	out      []byte              // the 202's body

	// The produce's wait (produce): the records' context, the promise
	// (produced, bound once), how many promises are still to run, the
	// first error, the signal of the last promise and the timer of the
	// produce timeout.
	pctx     *produceCtx
	promise  func(*kgo.Record, error)
	left     atomic.Int64
	errMu    sync.Mutex
	err      error
	finished chan struct{}
	timer    *time.Timer
}

// produceCtx is the context a request's records are produced under,
// canceled (cancel) when the produce timeout passes or the client goes
// away: kgo then fails the records it has not sent. It carries no values
// and no deadline (kgo reads neither), only Done and Err, and it is
// reused by the request's next uses until it is canceled; a canceled one
// is replaced, never reset, as kgo may still hold it (to cut a backoff
// short) after the promises ran. It stands in for a context.WithTimeout
// of the request's context, which cost each request 7 allocations.
type produceCtx struct {
	done chan struct{}
	err  error // set before done is closed
}

func newProduceCtx() *produceCtx { return &produceCtx{done: make(chan struct{})} }

func (*produceCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *produceCtx) Done() <-chan struct{}     { return c.done }
func (*produceCtx) Value(any) any               { return nil }

func (c *produceCtx) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// cancel cancels c with err; the request's goroutine calls it, once.
func (c *produceCtx) cancel(err error) {
	c.err = err
	close(c.done)
}

// produce hands the records to p and waits for every promise, as
// ProduceSync does, and returns the first error. When timeout passes, or
// rctx (the request's context) ends first, the records' context is
// canceled, and produce still waits for the promises: kgo fails the
// records it has not sent at once, and answers for the ones in flight.
func (q *request) produce(rctx context.Context, p producer, recs []*kgo.Record, timeout time.Duration) error {
	if len(recs) == 0 {
		return nil
	}
	if q.promise == nil { // a new request
		q.promise = q.produced
		q.pctx = newProduceCtx()
		q.finished = make(chan struct{}, 1)
		q.timer = time.NewTimer(timeout)
	} else {
		q.timer.Reset(timeout)
	}
	q.err = nil
	q.left.Store(int64(len(recs)))
	for _, r := range recs {
		p.Produce(q.pctx, r, q.promise)
	}
	select {
	case <-q.finished:
		q.timer.Stop()
	case <-q.timer.C:
		q.pctx.cancel(context.DeadlineExceeded)
		<-q.finished
	case <-rctx.Done():
		q.timer.Stop()
		q.pctx.cancel(rctx.Err())
		<-q.finished
	}
	if q.pctx.Err() != nil {
		q.pctx = newProduceCtx()
	}
	q.errMu.Lock()
	defer q.errMu.Unlock()
	return q.err
}

// produced is the promise of each of the request's records.
func (q *request) produced(_ *kgo.Record, err error) {
	if err != nil {
		q.errMu.Lock()
		if q.err == nil {
			q.err = err
		}
		q.errMu.Unlock()
	}
	if q.left.Add(-1) == 0 {
		q.finished <- struct{}{}
	}
}

// getRequest returns a request for r, which arrived at start, from the
// source of index src.
func (g *Gateway) getRequest(r *http.Request, start time.Time, src int) *request {
	q, _ := g.reqs.Get().(*request)
	if q == nil {
		q = &request{body: make([]byte, 0, 4096)}
	}
	q.start, q.src = start, src
	q.id, q.idv = g.requestID(r)
	return q
}

// putRequest gives q back to the pool. The records lose their contexts
// (a span's) and values, so that a pooled request keeps nothing alive.
func (g *Gateway) putRequest(q *request) {
	clear(q.krecs)
	q.idv = nil
	g.reqs.Put(q)
}

// records returns the request's n records and their pointers, to be
// filled.
func (q *request) records(n int) ([]kgo.Record, []*kgo.Record, []*envRoute) {
	q.krecs = slices.Grow(q.krecs[:0], n)[:n]
	q.ptrs = slices.Grow(q.ptrs[:0], n)[:n]
	q.envs = slices.Grow(q.envs[:0], n)[:n]
	return q.krecs, q.ptrs, q.envs
}
