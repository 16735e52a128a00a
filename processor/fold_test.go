package processor

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// TestFolderMatchesDirectFold folds random batches with one reused folder
// and compares every (room, partition, member) state and every partition's
// last offset with a direct fold of the same events.
func TestFolderMatchesDirectFold(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	var f folder
	for batchNo := 0; batchNo < 200; batchNo++ {
		f.reset()
		type key struct {
			room, topic string
			part        int32
			user        string
		}
		want := map[key]*ranking.MemberState{}
		last := map[[3]string]int64{}
		for off := int64(0); off < int64(r.IntN(60)); off++ {
			topic := fmt.Sprintf("t%d", r.IntN(3))
			part := int32(r.IntN(2))
			evs := make([]codec.Event, 1+r.IntN(4))
			for i := range evs {
				evs[i] = codec.Event{RoomID: fmt.Sprintf("r%d", r.IntN(5)), UserID: fmt.Sprintf("u%d", r.IntN(6)),
					Type: codec.TypeVolume, Value: r.Int64N(1000), TS: 1 + r.Int64N(20)}
				k := key{evs[i].RoomID, topic, part, evs[i].UserID}
				if want[k] == nil {
					want[k] = new(ranking.MemberState)
				}
				want[k].Apply(&evs[i])
				last[[3]string{evs[i].RoomID, topic, fmt.Sprint(part)}] = off
			}
			f.add(topic, part, off, 0, evs)
		}
		got := 0
		for _, u := range f.build() {
			for _, p := range u.Parts {
				if l := last[[3]string{u.Room, p.Topic, fmt.Sprint(p.Partition)}]; l != p.Last {
					t.Fatalf("batch %d: %s %s/%d last %d, want %d", batchNo, u.Room, p.Topic, p.Partition, p.Last, l)
				}
				for _, m := range p.Members {
					w := want[key{u.Room, p.Topic, p.Partition, m.UserID}]
					if w == nil || *w != m.State {
						t.Fatalf("batch %d: %s %s/%d %s = %+v, want %+v", batchNo, u.Room, p.Topic, p.Partition, m.UserID, m.State, w)
					}
					got++
				}
			}
		}
		if got != len(want) {
			t.Fatalf("batch %d: %d member updates, want %d", batchNo, got, len(want))
		}
	}
}
