package processor

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/model"
	"github.com/rostrumhq/rostrum/ranking"
)

// FuzzDecodeFold feeds arbitrary bytes, split into up to eight records on
// three topics and two partitions, through the processor's decode and fold
// steps. Invariants: nothing panics; a record is either in the DLQ or all
// its events are folded; and the folded member states, merged across
// partitions, equal the reference model's states after applying the
// accepted records' events once each.
func FuzzDecodeFold(f *testing.F) {
	f.Add([]byte(`{"room_id":"r-1","user_id":"u-1","type":"volume","value":512,"ts":1763700000123}`))
	f.Add([]byte(`[{"room_id":"r-1","user_id":"u-1","type":"audio","value":1,"ts":1763700000100},` +
		`{"room_id":"r-1","user_id":"u-2","type":"role","value":"host","ts":1763700000100}]` + "\n" +
		`{"room_id":"r-1","user_id":"u-1","type":"leave","ts":1763700000100}`))
	f.Add([]byte(`{"room_id":"r-2","user_id":"u-1","type":"join","ts":1763700000000}` + "\n" +
		`{"room_id":"r-2","user_id":"u-1","type":"gift","value":5,"ts":1763700000000}` + "\n" +
		`{"room_id":"r-2","user_id":"u-1","type":"video","value":1,"ts":1600000000000}` + "\n" + `not json`))
	f.Add([]byte(`{"room_id":"r-3","user_id":"u-9","type":"role","value":"assistant","ts":1763700000005}` + "\n" +
		`{"room_id":"r-3","user_id":"u-9","type":"role","value":"student","ts":1763700000005}`))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := Config{Brokers: []string{"x"}, Env: "test"}
	cfg.withDefaults()
	p := &Processor{cfg: cfg, topics: TopicsFor("", "test"), dec: codec.NewDecoder(cfg.Decode)}
	inputs := p.topics.Inputs()

	f.Fuzz(func(t *testing.T, data []byte) {
		var recs []*kgo.Record
		for i, v := range bytes.SplitN(data, []byte("\n"), 8) {
			recs = append(recs, &kgo.Record{Topic: inputs[i%3], Partition: int32(i % 2), Offset: int64(i), Value: v})
		}
		b := &batch{p: p, recs: recs, fold: &folder{}, boards: noBoards{}}
		b.decode(now)

		m := model.New(p.cfg.Meeting)
		users := map[[2]string]bool{}
		rejected := 0
		for _, r := range recs {
			evs, err := p.dec.Decode(nil, r.Value, p.topics.source(r.Topic), now)
			if err == nil {
				err = p.checkEvents(evs)
			}
			if err != nil {
				rejected++
				continue
			}
			for _, ev := range evs {
				m.Apply(ev)
				if !ev.Type.Board() {
					users[[2]string{ev.RoomID, ev.UserID}] = true
				}
			}
		}
		if rejected != len(b.dlq) {
			t.Fatalf("%d records rejected, %d in the DLQ", rejected, len(b.dlq))
		}

		got := map[[2]string]*ranking.MemberState{}
		for _, ru := range b.rooms {
			for _, part := range ru.Parts {
				for _, mu := range part.Members {
					k := [2]string{ru.Room, mu.UserID}
					if got[k] == nil {
						got[k] = new(ranking.MemberState)
					}
					got[k].Merge(&mu.State)
				}
			}
		}
		if len(got) != len(users) {
			t.Fatalf("folded %d members, the accepted events touch %d", len(got), len(users))
		}
		for k, s := range got {
			want, ok := m.State(k[0], k[1])
			if !ok {
				t.Fatalf("member %v folded but unknown to the model", k)
			}
			e := s.Effective()
			for _, c := range []struct {
				name        string
				ts, v       int64
				wantTS, wnt int64
			}{
				{"audio", e.AudioTS, int64(e.Audio), want.Audio.TS, want.Audio.Value},
				{"volume", e.VolumeTS, int64(e.Volume), want.Volume.TS, want.Volume.Value},
				{"video", e.VideoTS, int64(e.Video), want.Video.TS, want.Video.Value},
				{"role", e.RoleTS, int64(e.Role), want.Role.TS, want.Role.Value},
				{"presence", e.PresenceTS, int64(e.Presence), want.Presence.TS, want.Presence.Value},
			} {
				if c.ts != c.wantTS || (c.ts != 0 && c.v != c.wnt) {
					t.Fatalf("member %v %s: folded (%d at %d), model (%d at %d)", k, c.name, c.v, c.ts, c.wnt, c.wantTS)
				}
			}
			if e.MaxTS != want.Time {
				t.Fatalf("member %v time: folded %d, model %d", k, e.MaxTS, want.Time)
			}
		}
	})
}
