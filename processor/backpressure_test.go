package processor_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
	"github.com/rostrumhq/rostrum/web"
)

// TestBackPressure stalls redis-server (SIGSTOP: "slow") and then kills it
// ("down") while the processor works through a trace. Each time the
// processor must pause fetching (no fetch requests reach the broker while a
// batch retries), report not ready on /readyz, and once Redis is back,
// resume, report ready again and end in the model's state.
func TestBackPressure(t *testing.T) {
	if testing.Short() {
		t.Skip("back-pressure test skipped in -short mode")
	}
	w := newWorld(t, e2eTrace(8, 12000))
	produced := w.produce(300, 30*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Short client timeouts so that a stalled Redis fails a round trip
	// quickly; go-redis's default read timeout is 3 s.
	rc := redis.NewClient(&redis.Options{Addr: w.redis.Addr, DialTimeout: 300 * time.Millisecond,
		ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, MaxRetries: 1})
	defer rc.Close()
	store, err := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	if err != nil {
		t.Fatal(err)
	}
	log, err := wal.Open(t.TempDir(), wal.Config{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	p, err := processor.New(ctx, processor.Config{
		Brokers: w.kafka.Seeds, Env: env, MaxPollRecords: 300,
		Decode: codec.DecodeConfig{MaxFutureSkew: time.Minute},
		// Dwell and Grace 0: the final lists are compared with the model at once.
		KafkaOpts: testenv.FastGroupOpts(),
		Retry:     processor.RetryConfig{Backoff: 50 * time.Millisecond, UnreadyFailures: 3, UnreadyAfter: time.Minute},
	}, store, log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(web.Config{Source: store, Ready: p.Ready}))
	defer srv.Close()
	readyz := func() int {
		res, err := srv.Client().Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	fetches := w.kafka.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Observe: true, Count: -1})

	for _, fault := range []struct {
		name         string
		inject, heal func()
	}{
		{"slow (SIGSTOP)", w.redis.Pause, w.redis.Resume},
		{"down (SIGKILL)", w.redis.Kill, func() { w.redis.Restart(true) }},
	} {
		at := p.Stats().Records.Load() + 2000
		waitFor("progress before "+fault.name, func() bool { return p.Stats().Records.Load() >= at })
		fault.inject()
		waitFor(fault.name+": fetching paused", p.FetchPaused)
		waitFor(fault.name+": /readyz 503", func() bool { return readyz() == 503 })
		if err := p.Ready(ctx); err == nil {
			t.Fatalf("%s: Ready is nil while /readyz says 503", fault.name)
		} else if nr := (*processor.NotReady)(nil); !errors.As(err, &nr) || (nr.Class != processor.NotReadyBatches && nr.Class != processor.NotReadyRedis) {
			t.Fatalf("%s: not ready with %v, want the class batches or redis", fault.name, err)
		} else {
			t.Logf("%s: not ready: %v", fault.name, err)
		}
		// A fetch in flight when the batch failed may still land; after
		// that, none is sent while the batch retries.
		time.Sleep(500 * time.Millisecond)
		before, buffered := fetches.Hits(), p.BufferedRecords()
		time.Sleep(time.Second)
		if !p.FetchPaused() {
			t.Fatalf("%s: fetching resumed while Redis is still failing", fault.name)
		}
		if n := fetches.Hits() - before; n != 0 {
			t.Fatalf("%s: %d fetch requests sent while fetching was paused", fault.name, n)
		}
		if b := p.BufferedRecords(); b > buffered {
			t.Fatalf("%s: buffered records grew from %d to %d while paused", fault.name, buffered, b)
		}
		retries := p.Stats().Retries.Load()
		fault.heal()
		waitFor(fault.name+": fetching resumed", func() bool { return !p.FetchPaused() })
		waitFor(fault.name+": /readyz 200", func() bool { return readyz() == 200 })
		t.Logf("%s: %d buffered records while paused, %d retries so far", fault.name, buffered, retries)
	}
	w.waitProduced(produced)
	w.waitCaughtUp(2 * time.Minute)
	// A list changed by the last events is published when its dwell has
	// passed; the check compares the last published lists with the model.
	waitNoDue(t, w.rc)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	w.check()
}
