package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// HostsConfig configures Hosts.
type HostsConfig struct {
	BaseURL string        // the HTTP server of `rostrum run`, e.g. http://127.0.0.1:8080; required
	Every   time.Duration // one round of clicks this often; default 3s
	Token   string        // bearer token of the control API; "" with --control-insecure
}

// Hosts simulates the meeting hosts at the record button until ctx ends:
// each round it picks a room from /v1/rooms and has one to three hosts
// click start (when it is idle) or stop (when it is recording) at the
// same time, so that the page shows one of them win; now and then a host
// also changes the room's layout. Failed requests are ignored (the page
// shows the state).
func Hosts(ctx context.Context, cfg HostsConfig) error {
	if cfg.Every <= 0 {
		cfg.Every = 3 * time.Second
	}
	cl := &http.Client{Timeout: 10 * time.Second}
	do := func(method, path, body string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, cfg.BaseURL+path, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		if cfg.Token != "" {
			req.Header.Set("Authorization", "Bearer "+cfg.Token)
		}
		req.Header.Set("Content-Type", "application/json")
		return cl.Do(req)
	}
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		room, ok := pickRoom(do)
		if !ok {
			continue
		}
		resp, err := do("GET", "/v1/rooms/"+room+"/recording", "")
		if err != nil {
			continue
		}
		var st struct {
			State string `json:"state"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		action := "start"
		if st.State == "recording" {
			action = "stop"
		}
		var wg sync.WaitGroup
		for i := range 1 + rand.IntN(3) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := fmt.Sprintf(`{"by":"host-%d","params":{"resolution":"1920x1080"}}`, i+1)
				if action == "stop" {
					body = fmt.Sprintf(`{"by":"host-%d"}`, i+1)
				}
				if resp, err := do("POST", "/v1/rooms/"+room+"/recording/"+action, body); err == nil {
					resp.Body.Close()
				}
			}()
		}
		wg.Wait()
		if rand.IntN(4) == 0 {
			body := fmt.Sprintf(`{"tiles":%d,"background":"#10161f"}`, []int{4, 6, 9}[rand.IntN(3)])
			if resp, err := do("PUT", "/v1/rooms/"+room+"/layout", body); err == nil {
				resp.Body.Close()
			}
		}
	}
}

// pickRoom returns a random room of the page's room list.
func pickRoom(do func(method, path, body string) (*http.Response, error)) (string, bool) {
	resp, err := do("GET", "/v1/rooms?limit=200", "")
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var page struct {
		Rooms []struct {
			RoomID string `json:"room_id"`
		} `json:"rooms"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || len(page.Rooms) == 0 {
		return "", false
	}
	return page.Rooms[rand.IntN(len(page.Rooms))].RoomID, true
}
