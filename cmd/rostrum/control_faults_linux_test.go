package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/sink"
)

// TestControlRacesUnderFaults has 24 clients race starts and stops of four
// rooms through three `rostrum run` processes for 20 s while one process
// after another is SIGKILLed and restarted (every 2–3 s) and redis-server
// is SIGKILLed and restarted with its append-only file (every 6–7 s).
// Requests caught by a fault fail or answer 503; their change may have
// been made, and is then published later (the outbox, by a request for the
// room or another instance's sweep), unless its record already reached the
// topic (a writer that died, or lost Redis, after Kafka acknowledged the
// record and before it deleted the entry; a Redis restart that lost the
// deletion): the recovery looks it up first (control/outbox.go). Once every
// room's state token is on the commands topic and every outbox is empty
// (a change's entry is deleted only once its record is on the topic; a
// writer whose produce went unanswered holds its entry until the produce
// resolves, so its record may land after later changes' records):
//
//   - no two requests won with one token of a room (one winner per token);
//   - every winner's command is on the topic, with its token, action and
//     recording id;
//   - no token of a room is on the topic twice: every command is published
//     exactly once;
//   - each room's commands, by token, alternate start, stop, start…: a
//     change made but never published would show as two starts or two
//     stops in a row.
func TestControlRacesUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("control under faults skipped in -short mode")
	}
	// fsync always: a SIGKILLed server comes back with every change it
	// acknowledged; what it acknowledged is what the outbox publishes.
	e := newCtlEnv(t, testenv.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	// Each process in a group of its own (see crashAfterStep); a short
	// lease and a fast sweep so that the changes of killed processes are
	// published within the test.
	gen := 0
	var all []*runProc // every process, for its log
	start := func() *runProc {
		gen++
		p := e.start(nil, "--group", fmt.Sprintf("ctl-race-%d", gen), "--control-lease", "2s",
			"--control-produce-timeout", "1s", "--control-sweep-interval", "200ms")
		all = append(all, p)
		return p
	}
	var mu sync.Mutex
	procs := []*runProc{start(), start(), start()}
	base := func(i int) string {
		mu.Lock()
		defer mu.Unlock()
		return procs[i%len(procs)].base
	}
	rooms := []string{"rf-0", "rf-1", "rf-2", "rf-3"}

	type reply struct {
		room, action string
		r            ctlReply
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var replies []reply
	var wg sync.WaitGroup
	for c := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for ctx.Err() == nil {
				room := rooms[rng.IntN(len(rooms))]
				action := []string{"start", "stop"}[rng.IntN(2)]
				r := e.send(base(rng.IntN(3)), "POST", "/v1/rooms/"+room+"/recording/"+action, fmt.Sprintf(`{"by":"u-%d"}`, c))
				mu.Lock()
				replies = append(replies, reply{room, action, r})
				mu.Unlock()
			}
		}()
	}
	kills, restarts := 0, 0
	lastRedis := time.Now()
	for ctx.Err() == nil {
		time.Sleep(time.Duration(2000+rand.IntN(1000)) * time.Millisecond)
		i := kills % 3
		mu.Lock()
		victim := procs[i]
		mu.Unlock()
		_ = victim.cmd.Process.Kill()
		<-victim.exited
		kills++
		if time.Since(lastRedis) > 6*time.Second {
			e.redis.Kill()
			time.Sleep(300 * time.Millisecond)
			e.redis.Restart(true)
			restarts++
			lastRedis = time.Now()
		}
		p := start()
		mu.Lock()
		procs[i] = p
		mu.Unlock()
	}
	wg.Wait()

	// One winner per token.
	type win struct{ action, recordingID string }
	winners := map[string]map[int64]win{} // room → token → win
	counts := map[int]int{}
	for _, rp := range replies {
		counts[rp.r.status]++
		won := (rp.action == "start" && rp.r.status == http.StatusCreated) || (rp.action == "stop" && rp.r.status == http.StatusOK)
		if !won {
			continue
		}
		var st struct {
			Token       int64  `json:"token"`
			RecordingID string `json:"recording_id"`
		}
		if err := json.Unmarshal(rp.r.body, &st); err != nil || st.Token == 0 {
			t.Fatalf("%s %s answered %d %s: %v", rp.action, rp.room, rp.r.status, rp.r.body, err)
		}
		if winners[rp.room] == nil {
			winners[rp.room] = map[int64]win{}
		}
		if w, dup := winners[rp.room][st.Token]; dup {
			t.Errorf("room %s token %d won twice: %s and %s", rp.room, st.Token, w.action, rp.action)
		}
		winners[rp.room][st.Token] = win{rp.action, st.RecordingID}
	}

	// Wait until each room's state token is on the topic and its outbox is
	// empty: every change made, also by a request a fault interrupted, has
	// been published.
	rc := e.redis.Client()
	settled := func() ([]ctlCommand, bool) {
		cmds := e.commands()
		last := map[string]int64{}
		for _, c := range cmds {
			last[c.RoomID] = max(last[c.RoomID], c.Token)
		}
		for _, room := range rooms {
			r := e.send(base(0), "GET", "/v1/rooms/"+room+"/recording", "")
			if r.err != nil || r.status != http.StatusOK {
				return cmds, false
			}
			var st struct {
				Token int64 `json:"token"`
			}
			if json.Unmarshal(r.body, &st) != nil || st.Token != last[room] {
				return cmds, false
			}
			if n, err := rc.HLen(context.Background(), sink.RoomPrefix("test", room)+"ctl:out").Result(); err != nil || n > 0 {
				return cmds, false
			}
		}
		return cmds, true
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := settled(); ok {
			break
		}
		if time.Now().After(deadline) {
			cmds, _ := settled()
			t.Fatalf("a room's state token is not on the commands topic, or its outbox not empty, after a minute; %d commands", len(cmds))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// More sweeps, to give a second publication the chance to show.
	time.Sleep(2 * time.Second)
	cmds, _ := settled()

	published := map[string]map[int64]int{}
	byRoom := map[string][]ctlCommand{}
	first := map[string]string{} // room/token → the record's bytes
	repeats := 0
	for i, rec := range e.kafka.ReadAll(e.topics.Commands)[:len(cmds)] {
		c := cmds[i]
		if published[c.RoomID] == nil {
			published[c.RoomID] = map[int64]int{}
		}
		published[c.RoomID][c.Token]++
		k := fmt.Sprintf("%s/%d", c.RoomID, c.Token)
		if published[c.RoomID][c.Token] > 1 {
			repeats++
			t.Errorf("room %s token %d published again at offset %d of partition %d: %s (first %s)", c.RoomID, c.Token, rec.Offset, rec.Partition, rec.Value, first[k])
			continue
		}
		first[k] = string(rec.Value)
		byRoom[c.RoomID] = append(byRoom[c.RoomID], c)
		if w, ok := winners[c.RoomID][c.Token]; ok && (w.action != c.Action || w.recordingID != c.RecordingID) {
			t.Errorf("room %s token %d: published %+v, the winner was told %s %s", c.RoomID, c.Token, c, w.action, w.recordingID)
		}
	}
	nwin := 0
	for room, ws := range winners {
		for tok, w := range ws {
			nwin++
			if published[room][tok] == 0 {
				t.Errorf("room %s token %d: the %s won and was never published", room, tok, w.action)
			}
		}
	}
	for room, cs := range byRoom {
		slices.SortFunc(cs, func(a, b ctlCommand) int { return cmp.Compare(a.Token, b.Token) })
		for i, c := range cs {
			if want := []string{"start", "stop"}[i%2]; c.Action != want {
				for _, p := range procs { // their logs are read once they exited
					_ = p.cmd.Process.Signal(syscall.SIGTERM)
					<-p.exited
				}
				logControlEvidence(t, room, cs[max(0, i-2):i+1], all)
				t.Fatalf("room %s: command %d by token is %s (token %d), want %s: a change is missing or doubled", room, i, c.Action, c.Token, want)
			}
		}
	}
	// Entries a recovery found already on the topic: without the lookup,
	// each would have been a repeat. Their logs are read once every process
	// has exited.
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.exited
	}
	dropped := 0
	for _, p := range all {
		dropped += strings.Count(p.out.String(), "already on its topic")
	}
	t.Logf("%d requests (answers %v), %d winners, %d commands published: %d distinct (%d changes whose request a fault interrupted), %d repeats, %d outbox entries found already published; %d process kills, %d Redis restarts",
		len(replies), counts, nwin, len(cmds), len(cmds)-repeats, len(cmds)-repeats-nwin, repeats, dropped, kills, restarts)
	if nwin == 0 || kills == 0 || restarts == 0 {
		t.Fatalf("nothing was tested: %d winners, %d kills, %d Redis restarts", nwin, kills, restarts)
	}
}

// logControlEvidence logs, for a failed alternation, the commands around
// it and what the processes logged of the room's outbox, so that a rare
// failure can be told from its output alone.
func logControlEvidence(t *testing.T, room string, around []ctlCommand, procs []*runProc) {
	t.Helper()
	for _, c := range around {
		t.Logf("room %s token %d: %s %s", room, c.Token, c.Action, c.RecordingID)
	}
	for i, p := range procs {
		n := 0
		for _, line := range strings.Split(p.out.String(), "\n") {
			if strings.Contains(line, `"room":"`+room+`"`) && strings.Contains(line, "control:") && n < 40 {
				t.Logf("process %d: %s", i, line)
				n++
			}
		}
	}
}
