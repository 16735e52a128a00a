package web_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/web"
)

// The browser tests drive Debian's chromium over the DevTools protocol on a
// pipe (--remote-debugging-pipe), with no client library. --dump-dom with
// --virtual-time-budget does not work for this page: virtual time stands
// still while a request is open, and the page's event stream never ends.

// chromiumPath returns Debian's chromium, or skips the test without it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Skip("chromium not installed: apt-get install -y chromium")
	return ""
}

// browser is a headless chromium with one page, driven over a pipe.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	stderr  bytes.Buffer
	in      *os.File // chromium reads commands here (its fd 3)
	msgs    chan map[string]json.RawMessage
	nextID  int
	session string // the page's session
}

// startBrowser starts chromium with a window of w×h pixels showing url.
func startBrowser(t *testing.T, url string, w, h int) *browser {
	t.Helper()
	bin := chromiumPath(t)
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, in: cmdW, msgs: make(chan map[string]json.RawMessage, 64)}
	b.cmd = exec.Command(bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-pipe",
		"--user-data-dir="+t.TempDir(), fmt.Sprintf("--window-size=%d,%d", w, h), "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, outW} // fds 3 and 4
	b.cmd.Stderr = &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	outW.Close()
	t.Cleanup(func() {
		b.in.Close()
		done := make(chan struct{})
		go func() { _ = b.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = b.cmd.Process.Kill()
			<-done
		}
		outR.Close()
	})
	go func() {
		defer close(b.msgs)
		r := bufio.NewReader(outR)
		for {
			raw, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(raw[:len(raw)-1], &m) == nil {
				b.msgs <- m
			}
		}
	}()

	var target struct{ TargetID string }
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct{ SessionID string }
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	b.call(b.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": w, "height": h, "deviceScaleFactor": 1, "mobile": false}, nil)
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
	return b
}

// call sends one DevTools command and decodes its result into out.
func (b *browser) call(session, method string, params any, out any) {
	b.t.Helper()
	b.nextID++
	id := b.nextID
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		b.t.Fatalf("chromium %s: %v\n%s", method, err, b.stderr.String())
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case m, ok := <-b.msgs:
			if !ok {
				b.t.Fatalf("chromium exited during %s\n%s", method, b.stderr.String())
			}
			var got int
			if json.Unmarshal(m["id"], &got) != nil || got != id {
				continue // an event, or another reply
			}
			if e, ok := m["error"]; ok {
				b.t.Fatalf("chromium %s: %s", method, e)
			}
			if out != nil {
				if err := json.Unmarshal(m["result"], out); err != nil {
					b.t.Fatalf("chromium %s: %v in %s", method, err, m["result"])
				}
			}
			return
		case <-timeout:
			b.t.Fatalf("chromium %s: no reply within a minute\n%s", method, b.stderr.String())
		}
	}
}

// eval evaluates a JavaScript expression in the page and decodes its value.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	var res struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct{ Text string }
	}
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		b.t.Fatalf("evaluate %s: %s", expr, res.ExceptionDetails.Text)
	}
	if err := json.Unmarshal(res.Result.Value, out); err != nil {
		b.t.Fatalf("evaluate %s: %v in %s", expr, err, res.Result.Value)
	}
}

// waitFor evaluates expr every 100ms until it is true, for up to 30 seconds
// (generous: the assertion is about what appears, not how fast).
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		b.eval("Boolean("+expr+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var dom string
			b.eval("document.documentElement.outerHTML", &dom)
			b.t.Fatalf("waiting for %s: %s is still false; page:\n%s", what, expr, dom)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tilesJS lists the users of the stable tiles in slot order.
const tilesJS = `[...document.querySelectorAll('#stable > div.tile')].map(t => t.dataset.user)`

// TestBrowserTiles loads the page in headless chromium. Without a room in
// the URL it must pick the first (busiest) room, draw one tile per stable
// slot with the Source's members, fill the raw table, and then, pushed by the
// event stream without a reload, show a different set of tiles. A click on
// another room selects it.
func TestBrowserTiles(t *testing.T) {
	chromiumPath(t)
	src := rotatingSource()
	src.rooms = append(src.rooms, sink.RoomSummary{Room: "still", Seq: 0, Members: 1})
	spin := src.view
	src.view = func(room string) (sink.RoomView, error) {
		if room == "still" {
			return sink.RoomView{Room: "still", Seq: 0, Members: 1, Stable: []sink.MemberView{member("solo", 1, 10, 0, 4, now)},
				Raw: []sink.MemberView{member("solo", 1, 10, 0, 4, now)}}, nil
		}
		return spin(room)
	}
	ts := httptest.NewServer(web.New(web.Options{Source: src, Interval: 100 * time.Millisecond}))
	t.Cleanup(ts.Close) // after the browser's cleanup, which ends its event stream
	b := startBrowser(t, ts.URL+"/", 1280, 800)

	b.waitFor("seven tiles", tilesJS+`.length === 7`)
	var first []string
	b.eval(tilesJS, &first)
	for _, u := range first {
		if !strings.HasPrefix(u, "user-") {
			t.Fatalf("tile of %q, not a member of the source (tiles %v)", u, first)
		}
	}
	// The markup of the tiles as they are now (the stream may have moved on).
	var snap struct {
		Users []string
		DOM   string
	}
	b.eval(`({users: `+tilesJS+`, dom: document.documentElement.outerHTML})`, &snap)
	for i, u := range snap.Users {
		tile := fmt.Sprintf(`<div class="tile" data-slot="%d" data-user="%s"`, i, u)
		if !strings.Contains(snap.DOM, tile) {
			t.Fatalf("page lacks %s:\n%s", tile, snap.DOM)
		}
	}
	var hash string
	b.eval("location.hash", &hash)
	if hash != "#spin" {
		t.Fatalf("URL hash %q, want the first room #spin", hash)
	}
	b.waitFor("raw rows", `document.querySelectorAll('#raw tbody tr[data-user^="user-"]').length === 7`)

	b.waitFor("other tiles", tilesJS+`.join() !== `+jsString(strings.Join(first, ",")))
	var later []string
	b.eval(tilesJS, &later)
	if len(later) != 7 || slices.Equal(first, later) {
		t.Fatalf("tiles %v, then %v: want seven other tiles", first, later)
	}
	t.Logf("tiles %v, then %v (after %d reads)", first, later, src.calls.Load())

	b.waitFor("the room list", `document.querySelector('button[data-room="still"]')`)
	b.eval(`document.querySelector('button[data-room="still"]').click(), true`, new(bool))
	b.waitFor("the clicked room", tilesJS+`.join() === "solo" && location.hash === "#still"`)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestScreenshot writes a screenshot of the page with a realistic room to
// the path in ROSTRUM_SCREENSHOT (make screenshot); without it, it skips.
func TestScreenshot(t *testing.T) {
	path := os.Getenv("ROSTRUM_SCREENSHOT")
	if path == "" {
		t.Skip("set ROSTRUM_SCREENSHOT=<file.png> to write a screenshot")
	}
	chromiumPath(t)
	room := meetingRoom()
	src := &fakeSource{rooms: meetingRooms()}
	src.view = func(string) (sink.RoomView, error) { return room, nil }
	var calls atomic.Int64
	counters := func() web.Counters {
		polls := calls.Add(1)
		return web.Counters{Records: 1_204_331 + 2_100*polls, Events: 3_918_020 + 7_400*polls, DLQ: 17,
			Published: 48_211 + 3*polls, LagRecords: 240, LagSeconds: 0.4}
	}
	ts := httptest.NewServer(web.New(web.Options{Source: src, Counters: counters, Interval: 250 * time.Millisecond}))
	t.Cleanup(ts.Close)
	b := startBrowser(t, ts.URL+"/#r-1001", 1280, 800)
	b.waitFor("the room", tilesJS+`.length === 7 && document.querySelectorAll('#rooms li').length === 5`)
	b.waitFor("the counters", `document.querySelector('[data-k="rate"]').textContent !== '—'`)
	time.Sleep(1500 * time.Millisecond) // let the slot-change flashes fade
	var shot struct{ Data string }
	b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}
