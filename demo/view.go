package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
)

// View consumes the output topic and prints, every interval, the stable
// top lists of the busiest rooms as a layout service would see them. opts
// are added to the consumer's options (TLS and SASL).
func View(ctx context.Context, brokers []string, topic string, rooms int, interval time.Duration, w io.Writer, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	latest := map[string]codec.Output{}
	changes := map[string]int{}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, interval/4)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			var o codec.Output
			if json.Unmarshal(r.Value, &o) == nil && o.Seq >= latest[o.RoomID].Seq {
				latest[o.RoomID] = o
				changes[o.RoomID]++
			}
		})
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			printRooms(w, latest, changes, rooms)
		default:
		}
	}
}

func printRooms(w io.Writer, latest map[string]codec.Output, changes map[string]int, n int) {
	ids := make([]string, 0, len(latest))
	for id := range latest {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		return changes[ids[i]] > changes[ids[j]] || changes[ids[i]] == changes[ids[j]] && ids[i] < ids[j]
	})
	var b strings.Builder
	fmt.Fprintf(&b, "\n── %s · stable top lists of the %d busiest rooms (of %d) ──\n", time.Now().Format("15:04:05"), min(n, len(ids)), len(ids))
	for _, id := range ids[:min(n, len(ids))] {
		o := latest[id]
		fmt.Fprintf(&b, "%-8s seq %-4d", id, o.Seq)
		for _, m := range o.Top {
			mic := "·"
			if m.Audio == 1 {
				mic = "🎤"
			}
			cam := ""
			if m.Video == 1 {
				cam = "📷"
			}
			fmt.Fprintf(&b, " │ %s%s%s %s %d", m.UserID, mic, cam, m.Role, m.Volume)
		}
		b.WriteString("\n")
	}
	_, _ = io.WriteString(w, b.String())
}
