package codec_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// sampleCallback is one entry of testdata/callbacks/expected.json: a record
// value in a file, the source of the topic it arrives on, and what the
// decoder makes of it: the events, or the DLQ reason.
type sampleCallback struct {
	File   string        `json:"file"`
	Source string        `json:"source"`
	DLQ    string        `json:"dlq"`
	Events []sampleEvent `json:"events"`
}

type sampleEvent struct {
	RoomID string `json:"room_id"`
	UserID string `json:"user_id"`
	Type   string `json:"type"`
	Value  int64  `json:"value"`
	TS     int64  `json:"ts"`
	Source string `json:"source"`
	ID     string `json:"id"`
	// Amounts with decimal places, and remove events.
	Decimals uint8  `json:"decimals"`
	Board    string `json:"board"`
	Settled  bool   `json:"settled"`
}

// sampleNow is the clock the expected outcomes were taken at: the samples'
// event time, so that the future-skew rule (5 minutes by default) holds for
// them and refuses the one an hour ahead.
var sampleNow = time.UnixMilli(1763700000123)

// TestTestdataCallbacks decodes every sample callback record of the
// repository's testdata/callbacks with the default limits and checks it
// against testdata/callbacks/expected.json: the events of a valid record,
// field by field, or the exact one-line reason the processor puts in the
// rostrum-error header of a rejected record's DLQ copy. Every sample file
// must be listed, every listed file must exist, and the valid samples must
// hold every meeting and board event type.
func TestTestdataCallbacks(t *testing.T) {
	dir := filepath.Join("..", "testdata", "callbacks")
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var samples []sampleCallback
	if err := json.Unmarshal(b, &samples); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	listed := map[string]bool{}
	var valid, invalid int
	types := map[string]bool{} // event types the valid samples hold
	var d codec.Decoder
	for _, s := range samples {
		listed[s.File] = true
		t.Run(s.File, func(t *testing.T) {
			value, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(s.File)))
			if err != nil {
				t.Fatal(err)
			}
			src, ok := codec.ParseSource(s.Source)
			if !ok {
				t.Fatalf("unknown source %q in expected.json", s.Source)
			}
			evs, err := d.Decode(nil, value, src, sampleNow)
			if s.DLQ != "" {
				invalid++
				if err == nil {
					t.Fatalf("decoded %d events, want DLQ reason %q", len(evs), s.DLQ)
				}
				if err.Error() != s.DLQ {
					t.Fatalf("DLQ reason\n got %q\nwant %q", err.Error(), s.DLQ)
				}
				return
			}
			valid++
			if err != nil {
				t.Fatalf("rejected (%v), want %d events", err, len(s.Events))
			}
			if len(evs) != len(s.Events) {
				t.Fatalf("%d events, want %d", len(evs), len(s.Events))
			}
			for i, ev := range evs {
				types[ev.Type.String()] = true
				got := sampleEvent{ev.RoomID, ev.UserID, ev.Type.String(), ev.Value, ev.TS, ev.Source.String(), ev.ID, ev.Decimals, ev.Board, ev.Settled}
				if got != s.Events[i] {
					t.Errorf("event[%d]\n got %+v\nwant %+v", i, got, s.Events[i])
				}
			}
		})
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		if !listed[filepath.ToSlash(rel)] {
			t.Errorf("%s is not listed in expected.json", rel)
		}
	}
	for _, typ := range []codec.Type{codec.TypeJoin, codec.TypeLeave, codec.TypeAudio, codec.TypeVideo, codec.TypeVolume, codec.TypeRole,
		codec.TypeGift, codec.TypeScore, codec.TypeReceived, codec.TypeRead, codec.TypePassed, codec.TypeTrade,
		codec.TypeScreenShare, codec.TypeSpotlight, codec.TypeRemove} {
		if !types[typ.String()] {
			t.Errorf("no valid sample holds an event of type %s", typ)
		}
	}
	if valid == 0 || invalid == 0 {
		t.Errorf("%d valid and %d invalid samples, want some of each", valid, invalid)
	}
}

// TestTestdataOutputs reads every published output record of
// testdata/outputs and checks that it is exactly what AppendOutput writes
// for its room, seq, ts, members and scores: the fields of each member are
// the ones its score encodes, and the wire format has not drifted from
// what subscribers were given.
func TestTestdataOutputs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "outputs", "two-rooms.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Published before ranking rules: the legacy rules' layout.
	m, err := codec.NewMeetingRules(codec.DefaultEpoch, codec.LegacyRules())
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		lines++
		var o codec.Output
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		ids := make([]string, len(o.Top))
		scores := make([]float64, len(o.Top))
		for i, mb := range o.Top {
			ids[i], scores[i] = mb.UserID, mb.Score
		}
		got, err := m.AppendOutput(nil, o.RoomID, o.Seq, o.TS, ids, scores)
		if err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		if !bytes.Equal(got, line) {
			t.Errorf("line %d:\n got %s\nwant %s", lines, got, line)
		}
	}
	if lines == 0 {
		t.Fatal("no output records in testdata/outputs/two-rooms.jsonl")
	}
}
