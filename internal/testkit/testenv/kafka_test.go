package testenv

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestKafkaGroupRoundTrip(t *testing.T) {
	const topic, group = "events", "rostrum"
	k := StartKafka(t, WithTopics(3, topic))
	ctx := context.Background()

	want := make(map[string]bool)
	for i := range 30 {
		v := fmt.Sprintf("event-%d", i)
		k.Produce(topic, []byte(strconv.Itoa(i)), []byte(v))
		want[v] = true
	}

	c := k.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	for got := 0; got < len(want); {
		fs := c.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("poll: %v", errs)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !want[string(r.Value)] {
				t.Errorf("unexpected or repeated record %q", r.Value)
			}
			want[string(r.Value)] = false
			got++
		})
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	adm := k.Admin()
	lags, err := adm.Lag(ctx, group)
	if err == nil {
		err = lags.Error()
	}
	if err != nil {
		t.Fatalf("lag: %v", err)
	}
	if n := lags[group].Lag.Total(); n != 0 {
		t.Fatalf("lag after committing everything = %d; want 0", n)
	}

	c.Close() // leave the group; Cleanup closes it again, harmlessly
	for i := range 5 {
		k.Produce(topic, nil, []byte(fmt.Sprintf("late-%d", i)))
	}
	lags, err = adm.Lag(ctx, group)
	if err == nil {
		err = lags.Error()
	}
	if err != nil {
		t.Fatalf("lag: %v", err)
	}
	if n := lags[group].Lag.Total(); n != 5 {
		t.Fatalf("lag after 5 more records = %d; want 5", n)
	}

	if n := len(k.ReadAll(topic)); n != 35 {
		t.Fatalf("ReadAll returned %d records; want 35", n)
	}
}

func TestKafkaReadAllTransactions(t *testing.T) {
	const topic = "out"
	k := StartKafka(t, WithTopics(2, topic))
	ctx := context.Background()
	tx := k.Client(kgo.TransactionalID("rostrum-test"), kgo.DefaultProduceTopic(topic))

	txn := func(commit kgo.TransactionEndTry, values ...string) {
		t.Helper()
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := tx.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	txn(kgo.TryCommit, "a", "b", "c")
	txn(kgo.TryAbort, "x", "y")
	txn(kgo.TryCommit, "d")
	k.Produce(topic, []byte("e"), []byte("e"))

	got := make(map[string]int)
	for _, r := range k.ReadAll(topic) {
		got[string(r.Value)]++
	}
	if len(got) != 5 {
		t.Errorf("ReadAll = %v; want a, b, c, d, e once each", got)
	}
	for _, v := range []string{"a", "b", "c", "d", "e"} {
		if got[v] != 1 {
			t.Errorf("ReadAll has %q %d times; want once", v, got[v])
		}
	}
}

func TestKafkaReadAllEmpty(t *testing.T) {
	k := StartKafka(t, WithTopics(4, "empty"))
	if rs := k.ReadAll("empty"); len(rs) != 0 {
		t.Fatalf("ReadAll of an empty topic = %d records; want 0", len(rs))
	}
}

func TestKafkaOptions(t *testing.T) {
	port := FreePort(t)
	k := StartKafka(t, WithPort(port), WithBrokers(2))
	if len(k.Seeds) != 2 || k.Seeds[0] != net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) {
		t.Fatalf("Seeds = %v; want 2 brokers, the first on port %d", k.Seeds, port)
	}
	k.CreateTopics(2, "a", "b")
	k.Produce("b", nil, []byte("v"))
	if rs := k.ReadAll("b"); len(rs) != 1 || string(rs[0].Value) != "v" {
		t.Fatalf("ReadAll(b) = %v; want one record v", rs)
	}
}

func TestKafkaFault(t *testing.T) {
	k := StartKafka(t, WithTopics(1, "events"))
	h := k.Fault(kfake.Fault{
		Keys:  []kmsg.Key{kmsg.Produce},
		Topic: "events",
		Err:   kerr.NotLeaderForPartition,
		Count: 2,
	})
	k.Produce("events", nil, []byte("v")) // retried past both faults
	if n := h.Hits(); n != 2 {
		t.Fatalf("fault hit %d times; want 2", n)
	}
	if rs := k.ReadAll("events"); len(rs) != 1 {
		t.Fatalf("ReadAll = %d records; want 1", len(rs))
	}
}

func TestKafkaFakeSkipsForContainer(t *testing.T) {
	var reached bool
	t.Run("container", func(t *testing.T) {
		k := &Kafka{tb: t} // as StartKafka returns it when container-backed
		k.Fault(kfake.Fault{})
		reached = true
	})
	if reached {
		t.Fatal("Fault went on without a kfake cluster; want the test skipped")
	}
}
