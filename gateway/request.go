package gateway

import (
	"net/http"
	"slices"
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
// ProduceSync returns only once every record's promise has run, after
// which kgo no longer touches the record; the ResponseWriter copied the
// answer; the span, if any, has ended. Everything a request fills is
// cut to length or overwritten before it is read, so nothing of one
// request can reach the next (TestGatewayPooledRequestsLeakNothing).
type request struct {
	start time.Time // when it arrived
	id    string    // its request id
	idv   []string  // the request's own X-Request-Id header when id is its value, else nil
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
