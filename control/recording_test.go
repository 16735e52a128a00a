package control

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestConcurrentStartsOneWinner fires concurrent starts, then stops, at one
// room and checks that exactly one of each wins, that every loser is told
// the current state, that tokens only grow, and that the commands topic
// holds exactly the winners' commands.
func TestConcurrentStartsOneWinner(t *testing.T) {
	r := newRig(t, nil, nil)
	const n, cycles = 40, 5
	var last int64
	var winners []map[string]any
	for c := 0; c < cycles; c++ {
		for _, action := range []string{"start", "stop"} {
			replies := make([]reply, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					body := fmt.Sprintf(`{"by":"u-%d","params":{"cycle":%d}}`, i, c)
					if action == "stop" {
						body = fmt.Sprintf(`{"by":"u-%d"}`, i)
					}
					replies[i] = doHTTP(t, r.srv.URL, "POST", "/v1/rooms/r-1/recording/"+action, body)
				}()
			}
			wg.Wait()
			won := 0
			for _, p := range replies {
				m := p.json(t)
				switch p.Status {
				case http.StatusCreated, http.StatusOK:
					won++
					winners = append(winners, m)
					tok := int64(m["token"].(float64))
					if tok <= last {
						t.Fatalf("cycle %d %s: token %d not above %d", c, action, tok, last)
					}
					last = tok
				case http.StatusConflict:
					if m["error"] == nil || m["state"] == nil {
						t.Fatalf("409 without reason or state: %s", p.Body)
					}
				default:
					t.Fatalf("%s: %d %s", action, p.Status, p.Body)
				}
			}
			if won != 1 {
				t.Fatalf("cycle %d %s: %d winners, want 1", c, action, won)
			}
		}
	}
	cmds := r.commands()
	if len(cmds) != len(winners) {
		t.Fatalf("%d commands published, want %d (one per winner)", len(cmds), len(winners))
	}
	for i, c := range cmds {
		w := winners[i]
		if c.Token != int64(w["token"].(float64)) || c.RecordingID != w["recording_id"] {
			t.Errorf("command %d = %+v, winner %v", i, c, w)
		}
	}
	st := r.do("GET", "/v1/rooms/r-1/recording", "").json(t)
	if st["state"] != "idle" || len(st["history"].([]any)) != cycles {
		t.Fatalf("state after %d cycles: %v", cycles, st)
	}
}
