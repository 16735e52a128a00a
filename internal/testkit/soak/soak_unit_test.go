package soak

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
)

// TestParts pins the oracle's split of a request body into the records the
// gateway writes (gateway/doc.go, "Pass-through"): an object as it is, an
// array by room in order with each part's events, and the refusals.
func TestParts(t *testing.T) {
	ev := func(room string) codec.Event { return codec.Event{RoomID: room, UserID: "u"} }
	a, b, c := `{"room_id":"r-1","i":0}`, `{"room_id":"r-2","i":1}`, `{"room_id":"r-1","i":2}`
	cases := []struct {
		name   string
		rec    trace.Record
		values []string // the parts' values, in order; nil: refused
		events []int    // events per part
		err    bool
	}{
		{"object", trace.Record{Topic: "rtc", Value: []byte(a), Events: []codec.Event{ev("r-1")}}, []string{a}, []int{1}, false},
		{"array one room", trace.Record{Topic: "rtc", Value: []byte("[" + a + "," + c + "]"), Events: []codec.Event{ev("r-1"), ev("r-1")}},
			[]string{"[" + a + "," + c + "]"}, []int{2}, false},
		{"array two rooms", trace.Record{Topic: "rtc", Value: []byte("[" + a + "," + b + "," + c + "]"), Events: []codec.Event{ev("r-1"), ev("r-2"), ev("r-1")}},
			[]string{"[" + a + "," + c + "]", "[" + b + "]"}, []int{2, 1}, false},
		{"not json", trace.Record{Topic: "rtc", Value: []byte(`{"room_id":`), Bad: "not json"}, nil, nil, false},
		{"no room id", trace.Record{Topic: "rtc", Value: []byte(`{"user_id":"u"}`), Bad: "no room"}, nil, nil, false},
		{"bad array of two rooms", trace.Record{Topic: "rtc", Value: []byte("[" + a + "," + b + "]"), Bad: "volume out of range"}, nil, nil, true},
	}
	for _, tc := range cases {
		parts, err := Parts(tc.rec)
		if (err != nil) != tc.err {
			t.Fatalf("%s: err %v, want an error: %v", tc.name, err, tc.err)
		}
		if len(parts) != len(tc.values) {
			t.Fatalf("%s: %d parts, want %d", tc.name, len(parts), len(tc.values))
		}
		for i, p := range parts {
			if string(p.Value) != tc.values[i] || len(p.Events) != tc.events[i] {
				t.Errorf("%s: part %d = %s with %d events, want %s with %d", tc.name, i, p.Value, len(p.Events), tc.values[i], tc.events[i])
			}
			for _, e := range p.Events {
				if e.RoomID != p.Key {
					t.Errorf("%s: part %d keyed %q holds an event of %q", tc.name, i, p.Key, e.RoomID)
				}
			}
		}
	}
}

// TestReconcile shows what the oracle counts: a 2xx record missing from
// the topic is lost, a topic record no request sent is unexpected, and a
// record of a request answered 503 may be there or not.
func TestReconcile(t *testing.T) {
	src := NewSource("test", 200)
	// The first three records the gateway routes (a bad one it refuses
	// would have no part to find).
	var sent []trace.Record
	var at []int
	for i := 0; len(sent) < 3; i++ {
		if parts, _ := Parts(src.Get(i)); len(parts) > 0 {
			sent, at = append(sent, src.Get(i)), append(at, i)
		} else {
			src.Done(i, refused)
		}
	}
	src.Done(at[0], accepted)
	src.Done(at[1], accepted)
	// The third stays unanswered (503s until the run ended).
	topicRecs := func(idx ...int) []*kgo.Record {
		var out []*kgo.Record
		for _, i := range idx {
			parts, err := Parts(sent[i])
			if err != nil || len(parts) == 0 {
				t.Fatalf("record %d: %v parts, %v", i, len(parts), err)
			}
			for _, p := range parts {
				out = append(out, &kgo.Record{Topic: "test.callbacks." + p.Topic, Key: []byte(p.Key), Value: p.Value})
			}
		}
		return out
	}
	rec, err := src.Reconcile(topicRecs(0, 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	if rec.LostN != 0 || rec.UnexpectedN != 0 || rec.Accepted != 2 || rec.Unanswered != 1 {
		t.Fatalf("all there: lost %d, unexpected %d, accepted %d, unanswered %d", rec.LostN, rec.UnexpectedN, rec.Accepted, rec.Unanswered)
	}
	rec, err = src.Reconcile(topicRecs(0))
	if err != nil {
		t.Fatal(err)
	}
	if rec.LostN == 0 {
		t.Fatal("record 1 was answered 2xx and is not in the topic: want it lost")
	}
	stray := append(topicRecs(0, 1), &kgo.Record{Topic: "test.callbacks.rtc", Key: []byte("r-0"), Value: []byte(`{"room_id":"r-0"}`)})
	if rec, err = src.Reconcile(stray); err != nil || rec.UnexpectedN != 1 {
		t.Fatalf("a record no request sent: unexpected %d (%v), want 1", rec.UnexpectedN, err)
	}
}

// TestSlopes checks the least-squares fit and the flatness verdict: a
// sawtooth around a level is flat, a steady climb is not, and the warm-up
// is left out.
func TestSlopes(t *testing.T) {
	slope, mean := LeastSquares([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7})
	if math.Abs(slope-2) > 1e-9 || math.Abs(mean-4) > 1e-9 {
		t.Fatalf("LeastSquares = %v, %v; want 2, 4", slope, mean)
	}
	var flat, leak []Sample
	for i := range 120 {
		at := time.Duration(i) * 15 * time.Second
		saw := float64(i%8) * 4 * (1 << 20) // WAL segments filling and pruned
		flat = append(flat, Sample{At: at, Procs: 3, ProcRSS: 3 * 100 << 20, WALBytes: 200<<20 + saw})
		// Warm-up: RSS climbs for the first 6 minutes, then a leak of
		// 1 MiB a minute per processor.
		rss := 3 * (100 + at.Minutes()) * (1 << 20)
		if at < 6*time.Minute {
			rss = 3 * (50 + 10*at.Minutes()) * (1 << 20)
		}
		leak = append(leak, Sample{At: at, Procs: 3, ProcRSS: rss, WALBytes: 200 << 20})
	}
	get := func(ss []Slope, name string) Slope {
		for _, s := range ss {
			if s.Metric.Name == name {
				return s
			}
		}
		t.Fatalf("no metric %q", name)
		return Slope{}
	}
	if s := get(Slopes(flat, 6*time.Minute), "WAL size"); !s.Flat {
		t.Errorf("a sawtooth WAL judged not flat: %+v", s)
	}
	if s := get(Slopes(flat, 6*time.Minute), "processor RSS (mean)"); !s.Flat || s.PerHour != 0 {
		t.Errorf("a constant RSS: %+v", s)
	}
	// The lag jumps for 45 s after a kill near the end; its baseline is
	// flat. A lag that climbs minute after minute is not.
	var spiky, climbing []Sample
	for i := range 120 {
		at := time.Duration(i) * 15 * time.Second
		lag := 200.0
		if at >= 25*time.Minute && at < 25*time.Minute+45*time.Second {
			lag = 100000
		}
		spiky = append(spiky, Sample{At: at, Procs: 3, Lag: lag})
		climbing = append(climbing, Sample{At: at, Procs: 3, Lag: 1000 * at.Minutes()})
	}
	if s := get(Slopes(spiky, 6*time.Minute), "consumer lag"); !s.Flat || s.PerHour != 0 {
		t.Errorf("a lag back at 200 after each spike: %+v, want flat", s)
	}
	if s := get(Slopes(climbing, 6*time.Minute), "consumer lag"); s.Flat {
		t.Errorf("a lag climbing 1000 records a minute: %+v, want not flat", s)
	}
	s := get(Slopes(leak, 6*time.Minute), "processor RSS (mean)")
	if s.Flat || math.Abs(s.PerHour-60) > 1e-6 {
		t.Errorf("a leak of 60 MiB/h per processor: %+v, want not flat at 60/h", s)
	}
}
