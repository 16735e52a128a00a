package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// TestWorkloads checks that every workload's records decode to exactly the
// events it says they hold, once stamped, and that a seed selects the
// records.
func TestWorkloads(t *testing.T) {
	dec := codec.NewDecoder(codec.DecodeConfig{})
	for _, info := range Workloads() {
		t.Run(info.Name, func(t *testing.T) {
			cfg := Config{Workload: info.Name, Events: 5000, Rooms: 7, Members: 13}
			w, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(w.Events) != cfg.Events {
				t.Fatalf("%d events, want %d", len(w.Events), cfg.Events)
			}
			now := time.Now()
			ms := now.UnixMilli()
			var evs []codec.Event
			seen := 0
			for i := range w.Records {
				r := &w.Records[i]
				w.stamp(r, ms)
				evs, err = dec.Decode(evs[:0], r.Value, r.Source, now)
				if err != nil {
					t.Fatalf("record %d %s: %v", i, r.Value, err)
				}
				if len(evs) != int(r.n) {
					t.Fatalf("record %d decodes to %d events, holds %d", i, len(evs), r.n)
				}
				for j, got := range evs {
					want := w.Events[int(r.first)+j]
					if got.RoomID != w.RoomIDs[want.Room] || got.RoomID != w.RoomIDs[r.Room] ||
						got.UserID != userID(want.Member) || got.Type != want.Type ||
						got.Value != int64(want.Value) || got.TS != ms {
						t.Fatalf("record %d event %d: decoded %+v, generated %+v", i, j, got, want)
					}
					if want.Member >= int32(w.Members) {
						t.Fatalf("record %d event %d: member %d of %d", i, j, want.Member, w.Members)
					}
				}
				seen += len(evs)
			}
			if seen != len(w.Events) {
				t.Fatalf("records hold %d events, want %d", seen, len(w.Events))
			}
			if info.Name != "churn" && len(w.RoomIDs) != cfg.Rooms {
				t.Fatalf("%d rooms, want %d", len(w.RoomIDs), cfg.Rooms)
			}

			again, _ := Generate(cfg)
			other, _ := Generate(Config{Workload: info.Name, Events: 5000, Rooms: 7, Members: 13, Seed: 2})
			same, differs := true, false
			for i := range again.Records {
				again.stamp(&again.Records[i], ms)
				same = same && bytes.Equal(again.Records[i].Value, w.Records[i].Value)
			}
			for i := range other.Records {
				other.stamp(&other.Records[i], ms)
				differs = differs || i >= len(w.Records) || !bytes.Equal(other.Records[i].Value, w.Records[i].Value)
			}
			if !same || len(again.Records) != len(w.Records) {
				t.Error("the same seed gave other records")
			}
			if !differs {
				t.Error("another seed gave the same records")
			}
		})
	}
}

func TestLatencyOf(t *testing.T) {
	var s []int64
	for i := 1000; i >= 1; i-- {
		s = append(s, int64(i))
	}
	l := latencyOf(s)
	if l.Samples != 1000 || l.P50 != 500 || l.P99 != 990 || l.P999 != 999 || l.Max != 1000 {
		t.Fatalf("latencyOf(1..1000) = %+v", *l)
	}
	if latencyOf(nil) != nil {
		t.Fatal("latencyOf(nil) is not nil")
	}
}
