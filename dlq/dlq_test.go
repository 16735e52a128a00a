package dlq_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/dlq"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

const (
	rtc    = "test.callbacks.rtc"
	client = "test.callbacks.client"
	topic  = "test.callbacks.dlq"
)

// sent is a record the processor sent to the DLQ, with the headers it
// writes (processor/publish.go).
type sent struct {
	from   string
	offset int64
	reason string
	at     time.Time
}

func produceDLQ(t *testing.T, k *testenv.Kafka, recs []sent) {
	t.Helper()
	cl := k.Client()
	for i, s := range recs {
		r := &kgo.Record{Topic: topic, Key: []byte("r-" + strconv.Itoa(i)), Value: []byte(`{"n":` + strconv.Itoa(i) + `}`), Timestamp: s.at,
			Headers: []kgo.RecordHeader{
				{Key: dlq.HeaderError, Value: []byte(s.reason)},
				{Key: dlq.HeaderTopic, Value: []byte(s.from)},
				{Key: dlq.HeaderPartition, Value: []byte("0")},
				{Key: dlq.HeaderOffset, Value: []byte(strconv.FormatInt(s.offset, 10))},
			}}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInspectAndRedrive reads a DLQ of six records from two topics, counts
// them, redrives one class (a dry run first), checks the records reached
// their topic unchanged with the header, that a second redrive skips them
// unless Again, and that selections by offset range and time hold.
func TestInspectAndRedrive(t *testing.T) {
	k := testenv.StartKafka(t, testenv.WithTopics(1, rtc, client, topic))
	cl := k.Client()
	h0 := time.Date(2026, 11, 22, 13, 10, 0, 0, time.UTC)
	h1 := h0.Add(time.Hour)
	produceDLQ(t, k, []sent{
		{rtc, 10, "event[0].value: volume must be 0..999, got 1000", h0},
		{rtc, 11, "value: volume must be 0..999, got 2000", h0},
		{client, 3, "ts: required", h0},
		{rtc, 12, "event[1].value: volume must be 0..999, got 1001", h1},
		{client, 4, "event[0].ts: 1 is before the score epoch 2025-01-01T00:00:00Z", h1},
		{rtc, 13, "json: unexpected end of input at byte 30", h1},
	})
	ctx := context.Background()

	recs, err := dlq.Read(ctx, cl, topic, dlq.All())
	if err != nil {
		t.Fatal(err)
	}
	s := dlq.Summarize(recs)
	if s.Records != 6 || s.ByClass["value"] != 3 || s.ByClass["ts"] != 2 || s.ByClass["json"] != 1 ||
		s.ByTopic[rtc] != 4 || s.ByTopic[client] != 2 || s.ByHour["2026-11-22T13"] != 3 || s.ByHour["2026-11-22T14"] != 3 || s.Redriven != 0 {
		t.Fatalf("summary %+v", s)
	}

	sel := dlq.All()
	sel.Classes = []string{"value"}
	dry, err := dlq.Redrive(ctx, cl, topic, sel, true)
	if err != nil || len(dry) != 3 {
		t.Fatalf("dry run: %d records, %v; want 3", len(dry), err)
	}
	if got := k.ReadAll(rtc); len(got) != 0 {
		t.Fatalf("a dry run produced %d records", len(got))
	}

	done, err := dlq.Redrive(ctx, cl, topic, sel, false)
	if err != nil || len(done) != 3 {
		t.Fatalf("redrive: %d records, %v; want 3", len(done), err)
	}
	got := k.ReadAll(rtc)
	if len(got) != 3 {
		t.Fatalf("%s holds %d records, want the 3 redriven", rtc, len(got))
	}
	for i, r := range got {
		want := done[i]
		if string(r.Key) != string(want.Key) || string(r.Value) != string(want.Value) {
			t.Errorf("redriven record %d: %s=%s, want %s=%s unchanged", i, r.Key, r.Value, want.Key, want.Value)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != dlq.HeaderRedrivenFrom || string(r.Headers[0].Value) != topic+"/"+want.ID() {
			t.Errorf("redriven record %d headers %v, want %s=%s/%s", i, r.Headers, dlq.HeaderRedrivenFrom, topic, want.ID())
		}
	}

	// Each marker carries the headers of every DLQ record rostrum writes
	// (docs/topics/dlq.md) and a null value.
	markers := 0
	for _, r := range k.ReadAll(topic) {
		h := testenv.RecordHeaders(r)
		if h[dlq.HeaderRedriveOf] == nil {
			continue
		}
		markers++
		if r.Value != nil || !slices.Equal(h["content-type"], []string{"application/json"}) ||
			!slices.Equal(h["rostrum-schema"], []string{"callbacks.dlq/1"}) || len(h[dlq.HeaderRedrivenTo]) != 1 {
			t.Errorf("marker value %q headers %v", r.Value, h)
		}
	}
	if markers != 3 {
		t.Errorf("%d markers, want 3", markers)
	}

	// The markers are not records; they mark the three as redriven.
	recs, err = dlq.Read(ctx, cl, topic, dlq.All())
	if err != nil {
		t.Fatal(err)
	}
	if s := dlq.Summarize(recs); s.Records != 6 || s.Redriven != 3 {
		t.Fatalf("after the redrive: %+v, want 6 records of which 3 redriven", s)
	}
	if again, err := dlq.Redrive(ctx, cl, topic, sel, false); err != nil || len(again) != 0 {
		t.Fatalf("second redrive: %d records, %v; want none (already redriven)", len(again), err)
	}
	sel.Again = true
	if again, err := dlq.Redrive(ctx, cl, topic, sel, true); err != nil || len(again) != 3 {
		t.Fatalf("second redrive with Again: %d records, %v; want 3", len(again), err)
	}

	// Offsets 1..3 of partition 0 in the first hour: offsets 1 and 2.
	sel = dlq.All()
	sel.Partition, sel.FromOffset, sel.ToOffset = 0, 1, 3
	sel.Until = h1
	recs, err = dlq.Read(ctx, cl, topic, sel)
	if err != nil || len(recs) != 2 || recs[0].Offset != 1 || recs[1].Offset != 2 {
		t.Fatalf("offsets 1-3 before %s: %v %v", h1, recs, err)
	}
	sel = dlq.All()
	sel.Topics, sel.Since = []string{client}, h1
	recs, err = dlq.Read(ctx, cl, topic, sel)
	if err != nil || len(recs) != 1 || recs[0].SourceOffset != 4 {
		t.Fatalf("client records since %s: %v %v", h1, recs, err)
	}
}

// TestReadEmptyAndMissing: an empty DLQ reads as no records; a missing one
// is an error.
func TestReadEmptyAndMissing(t *testing.T) {
	k := testenv.StartKafka(t, testenv.WithTopics(2, topic))
	if recs, err := dlq.Read(context.Background(), k.Client(), topic, dlq.All()); err != nil || len(recs) != 0 {
		t.Fatalf("empty DLQ: %v %v", recs, err)
	}
	if _, err := dlq.Read(context.Background(), k.Client(), "nope.callbacks.dlq", dlq.All()); err == nil {
		t.Fatal("a missing DLQ topic read without error")
	}
}

// TestClassOfDecoderReasons reads every invalid sample callback of
// testdata/callbacks through the decoder and checks that Class, from the
// reason's text, gives the label the processor counts it under (the
// decoder's field, or record).
func TestClassOfDecoderReasons(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "callbacks", "invalid", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	dec := codec.NewDecoder(codec.DecodeConfig{}.WithDefaults())
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, err = dec.Decode(nil, b, codec.SourceRTC, time.UnixMilli(1763700000123)) // the samples' clock (codec.TestTestdataCallbacks)
		var de *codec.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%s: %v, want a DecodeError", f, err)
		}
		want := de.Field
		if want == "" {
			want = "record"
		}
		if got := dlq.Class(err.Error()); got != want {
			t.Errorf("%s: Class(%q) = %q, want %q", filepath.Base(f), err, got, want)
		}
	}
	for reason, want := range map[string]string{
		`event[0].room_id: "p-1" does not belong to environment test (routes …)`:                 "room_env",
		`event[0].user_id: room "cap" has reached its members cap; new member "u-4" refused`:     "room_members",
		"board item-trades: event[0]: late: its slice had left every window when it was applied": "late",
		"": "unknown",
	} {
		if got := dlq.Class(reason); got != want {
			t.Errorf("Class(%q) = %q, want %q", reason, got, want)
		}
	}
}
