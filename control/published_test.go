package control

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaLookup checks that a lookup finds a record by its exact key and
// bytes among the records stamped after since, on any partition, and not a
// record of another room, with other bytes, or stamped before since.
func TestKafkaLookup(t *testing.T) {
	r := newRig(t, nil, nil)
	before := time.Now().Add(-time.Second)
	var rs []*kgo.Record
	for _, room := range []string{"r-1", "r-2", "r-3", "r-4", "r-5", "r-6"} {
		rs = append(rs, &kgo.Record{Topic: commandTopic, Key: []byte(room), Value: []byte(`{"room_id":"` + room + `","token":7}`)})
	}
	if err := r.pr.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	parts := map[int32]bool{}
	for _, rec := range rs {
		parts[rec.Partition] = true
	}
	if len(parts) < 2 {
		t.Fatalf("the records landed on %d partition(s); the test needs several", len(parts))
	}
	lk := NewKafkaLookup(r.pr)
	for _, c := range []struct {
		key, value string
		since      time.Time
		want       bool
	}{
		{"r-1", `{"room_id":"r-1","token":7}`, before, true},
		{"r-6", `{"room_id":"r-6","token":7}`, before, true},
		{"r-1", `{"room_id":"r-1","token":8}`, before, false},
		{"r-2", `{"room_id":"r-1","token":7}`, before, false},
		{"r-1", `{"room_id":"r-1","token":7}`, time.Now().Add(time.Minute), false},
		{"r-1", `{"room_id":"r-1","token":7}`, time.UnixMilli(0), true},
	} {
		got, err := lk.Contains(t.Context(), commandTopic, []byte(c.key), []byte(c.value), c.since)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("Contains(%s, %s, since %v) = %v, want %v", c.key, c.value, c.since, got, c.want)
		}
	}
	if got, err := lk.Contains(t.Context(), layoutTopic, []byte("r-1"), []byte("{}"), before); err != nil || got {
		t.Errorf("Contains on an empty topic = %v, %v", got, err)
	}
}

// TestStampOf checks the time a lookup starts from.
func TestStampOf(t *testing.T) {
	for rec, want := range map[string]int64{
		`{"room_id":"r","action":"start","token":5,"at":1795459602346,"params":{"at":1}}`: 1795459602346,
		`{"room_id":"r","version":2,"at":1795459602393,"persist":false,"layout":{}}`:      1795459602393,
		`{"room_id":"r"}`: 0,
		`not json`:        0,
	} {
		if got := stampOf(rec).UnixMilli(); got != want {
			t.Errorf("stampOf(%s) = %d, want %d", rec, got, want)
		}
	}
}

// producerOnly is a Producer that is not a *kgo.Client.
type producerOnly struct{}

func (producerOnly) ProduceSync(context.Context, ...*kgo.Record) kgo.ProduceResults { return nil }

// TestNewNeedsLookup checks that a Service without a way to look records up
// is refused: its recoveries could publish a record twice.
func TestNewNeedsLookup(t *testing.T) {
	_, err := New(nil, producerOnly{}, Config{Env: testEnv, CommandsTopic: commandTopic, LayoutTopic: layoutTopic, Insecure: true})
	if err == nil || !strings.Contains(err.Error(), "Lookup") {
		t.Fatalf("New with a producer that cannot read and no Lookup: %v, want an error naming Lookup", err)
	}
}
