package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// laterProducer runs each record's promise from a goroutine of its own:
// at once with err (nil or not), or, when hold is set, only once the
// produce context is done, with its error, as kgo fails a record it has
// not sent.
type laterProducer struct {
	err  error
	hold bool
	ctxs []context.Context
}

func (p *laterProducer) Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	p.ctxs = append(p.ctxs, ctx)
	go func() {
		if p.hold {
			<-ctx.Done()
			promise(r, ctx.Err())
			return
		}
		promise(r, p.err)
	}()
}

// TestRequestProduce: a request's produce waits for every record's
// promise and returns the first error; when the produce timeout passes or
// the client goes away, it cancels the records' context, still waits for
// the promises, and the request's next produce runs under a fresh context
// (a canceled one is never reused).
func TestRequestProduce(t *testing.T) {
	recs := func(n int) []*kgo.Record {
		out := make([]*kgo.Record, n)
		for i := range out {
			out[i] = &kgo.Record{Value: []byte{byte(i)}}
		}
		return out
	}
	q := &request{}
	ctx := context.Background()

	p := &laterProducer{}
	for range 3 {
		if err := q.produce(ctx, p, recs(5), time.Minute); err != nil {
			t.Fatalf("all acknowledged: %v", err)
		}
	}
	if p.ctxs[0] != p.ctxs[len(p.ctxs)-1] {
		t.Fatal("the context was replaced though never canceled")
	}

	boom := errors.New("boom")
	if err := q.produce(ctx, &laterProducer{err: boom}, recs(4), time.Minute); !errors.Is(err, boom) {
		t.Fatalf("a failed record: got %v, want %v", err, boom)
	}
	if err := q.produce(ctx, p, recs(1), time.Minute); err != nil {
		t.Fatalf("the error stayed with the request: %v", err)
	}

	held := &laterProducer{hold: true}
	if err := q.produce(ctx, held, recs(3), 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed out: got %v, want %v", err, context.DeadlineExceeded)
	}
	old := held.ctxs[0]
	if old.Err() == nil {
		t.Fatal("the timed-out records' context is not canceled")
	}
	if err := q.produce(ctx, p, recs(2), time.Minute); err != nil {
		t.Fatalf("after a timeout: %v", err)
	}
	if cur := p.ctxs[len(p.ctxs)-1]; cur == old || cur.Err() != nil {
		t.Fatal("the canceled context was reused")
	}

	rctx, cancel := context.WithCancel(ctx)
	held = &laterProducer{hold: true}
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if err := q.produce(rctx, held, recs(2), time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("client gone: got %v, want %v", err, context.Canceled)
	}

	if err := q.produce(ctx, held, nil, time.Millisecond); err != nil {
		t.Fatalf("no records: %v", err)
	}
}

// TestRequestIDs: the ids the gateway makes are unique across chunks and
// goroutines, base-counter in base 36, and each answer's header values
// hold its id alone, with no room to grow into a neighbour's.
func TestRequestIDs(t *testing.T) {
	s := &ids{base: "abc"}
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3*idChunk + 5 {
				id, v := s.next()
				if len(v) != 1 || cap(v) != 1 || v[0] != id {
					t.Errorf("header values %q (cap %d) for id %q", v, cap(v), id)
				}
				if !strings.HasPrefix(id, "abc-") || !saneID(id) {
					t.Errorf("id %q", id)
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("id %q handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if want := 8 * (3*idChunk + 5); len(seen) != want {
		t.Fatalf("%d ids, want %d", len(seen), want)
	}
	if id, _ := (&ids{base: "x"}).next(); id != "x-1" {
		t.Fatalf("first id %q, want x-1", id)
	}
}
