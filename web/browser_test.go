package web_test

import (
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/browser"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/web"
)

// tilesJS lists the users of the stable tiles in slot order.
const tilesJS = `[...document.querySelectorAll('#stable > div.tile')].map(t => t.dataset.user)`

// TestBrowserTiles loads the page in headless chromium. Without a room in
// the URL it must pick the first (busiest) room, draw one tile per stable
// slot with the Source's members, fill the raw table, and then, pushed by the
// event stream without a reload, show a different set of tiles. A click on
// another room selects it.
func TestBrowserTiles(t *testing.T) {
	browser.ChromiumPath(t)
	src := rotatingSource()
	src.rooms = append(src.rooms, ranking.RoomSummary{Room: "still", Seq: 0, Members: 1})
	spin := src.view
	src.view = func(room string) (ranking.RoomView, error) {
		if room == "still" {
			return ranking.RoomView{Room: "still", Seq: 0, Members: 1, Stable: []ranking.MemberView{member("solo", 1, 10, 0, 4, now)},
				Raw: []ranking.MemberView{member("solo", 1, 10, 0, 4, now)}}, nil
		}
		return spin(room)
	}
	ts := httptest.NewServer(web.New(web.Config{Source: src, Interval: 100 * time.Millisecond}))
	t.Cleanup(ts.Close) // after the browser's cleanup, which ends its event stream
	b := browser.Start(t, ts.URL+"/", 1280, 800)

	b.WaitFor("seven tiles", tilesJS+`.length === 7`)
	var first []string
	b.Eval(tilesJS, &first)
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
	b.Eval(`({users: `+tilesJS+`, dom: document.documentElement.outerHTML})`, &snap)
	for i, u := range snap.Users {
		tile := fmt.Sprintf(`<div class="tile" data-slot="%d" data-user="%s"`, i, u)
		if !strings.Contains(snap.DOM, tile) {
			t.Fatalf("page lacks %s:\n%s", tile, snap.DOM)
		}
	}
	var hash string
	b.Eval("location.hash", &hash)
	if hash != "#spin" {
		t.Fatalf("URL hash %q, want the first room #spin", hash)
	}
	b.WaitFor("raw rows", `document.querySelectorAll('#raw tbody tr[data-user^="user-"]').length === 7`)

	b.WaitFor("other tiles", tilesJS+`.join() !== `+browser.JSString(strings.Join(first, ",")))
	var later []string
	b.Eval(tilesJS, &later)
	if len(later) != 7 || slices.Equal(first, later) {
		t.Fatalf("tiles %v, then %v: want seven other tiles", first, later)
	}
	t.Logf("tiles %v, then %v (after %d reads)", first, later, src.calls.Load())

	// The switch shows the merge of the same raw lists, and counts the
	// visible changes of both.
	b.Eval(`document.getElementById('mode-merge').click(), true`, new(bool))
	b.WaitFor("merge tiles", `document.getElementById('stable').dataset.mode === 'merge' && `+tilesJS+`.length === 7 && `+
		tilesJS+`.every(u => u.startsWith('user-'))`)
	b.WaitFor("change counts", `document.querySelector('.rate[data-k="merge"]').textContent.endsWith('changes/min') && `+
		`document.getElementById('strategy').textContent === 'hysteresis'`)
	b.Eval(`document.getElementById('mode-published').click(), true`, new(bool))
	b.WaitFor("published tiles", `document.getElementById('stable').dataset.mode === 'published' && `+tilesJS+`.length === 7`)

	b.WaitFor("the room list", `document.querySelector('button[data-room="still"]')`)
	b.Eval(`document.querySelector('button[data-room="still"]').click(), true`, new(bool))
	b.WaitFor("the clicked room", tilesJS+`.join() === "solo" && location.hash === "#still"`)
}

// TestScreenshot writes a screenshot of the page with a realistic room to
// the path in ROSTRUM_SCREENSHOT (make screenshot); without it, it skips.
func TestScreenshot(t *testing.T) {
	path := os.Getenv("ROSTRUM_SCREENSHOT")
	if path == "" {
		t.Skip("set ROSTRUM_SCREENSHOT=<file.png> to write a screenshot")
	}
	browser.ChromiumPath(t)
	room := meetingRoom()
	src := &fakeSource{rooms: meetingRooms()}
	src.view = func(string) (ranking.RoomView, error) { return room, nil }
	var calls atomic.Int64
	counters := func() web.Counters {
		polls := calls.Add(1)
		return web.Counters{Records: 1_204_331 + 2_100*polls, Events: 3_918_020 + 7_400*polls, DLQ: 17,
			Published: 48_211 + 3*polls, LagRecords: 240, LagSeconds: 0.4}
	}
	ts := httptest.NewServer(web.New(web.Config{Source: src, Counters: counters, Interval: 250 * time.Millisecond}))
	t.Cleanup(ts.Close)
	b := browser.Start(t, ts.URL+"/#r-1001", 1280, 800)
	b.WaitFor("the room", tilesJS+`.length === 7 && document.querySelectorAll('#rooms li').length === 5`)
	b.WaitFor("the counters", `document.querySelector('[data-k="rate"]').textContent !== '—'`)
	time.Sleep(1500 * time.Millisecond) // let the slot-change flashes fade
	var shot struct{ Data string }
	b.Call(b.Session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}

// TestBrowserOperations loads the page with counters and checks what an
// operator reads and how the page behaves for keyboard and screen-reader
// users: sparklines, DLQ reasons and lag by partition are drawn; the room
// list is updated in place, so a focused room button keeps the focus across
// updates; the search filters the list; an aria-live region announces;
// media state is in aria-labels, not only in titles; and with reduced motion
// asked for, nothing animates.
func TestBrowserOperations(t *testing.T) {
	browser.ChromiumPath(t)
	room := meetingRoom()
	src := &fakeSource{rooms: meetingRooms(), roomsSeq: true}
	src.view = func(string) (ranking.RoomView, error) { return room, nil }
	var calls atomic.Int64
	counters := func() web.Counters {
		n := calls.Add(1)
		return web.Counters{Records: 100 * n, Events: 300 * n, DLQ: n, LagRecords: 40 + n%7, LagSeconds: 0.5,
			DLQByReason: map[string]int64{"json": n, "room_env": 2},
			Partitions: []web.PartitionLag{{Topic: "prod.callbacks.rtc", Partition: 0, Records: 30, Seconds: 0.5},
				{Topic: "prod.callbacks.rtc", Partition: 1, Records: 10, Seconds: 0.2}}}
	}
	ts := httptest.NewServer(web.New(web.Config{Source: src, Counters: counters, Interval: 50 * time.Millisecond}))
	t.Cleanup(ts.Close)
	b := browser.Start(t, ts.URL+"/#r-1001", 1280, 900)

	b.WaitFor("the room", tilesJS+`.length === 7 && document.querySelectorAll('#rooms li').length === 5`)
	b.WaitFor("sparklines", `[...document.querySelectorAll('.spark polyline')].every(p => p.getAttribute('points').split(' ').length > 3)`)
	b.WaitFor("DLQ reasons", `document.querySelector('#dlq-reasons tr[data-reason="json"]') && document.querySelector('#dlq-reasons tr[data-reason="room_env"]')`)
	b.WaitFor("lag by partition", `document.querySelectorAll('#partitions tbody tr').length === 2 && `+
		`document.querySelector('#partitions tr[data-partition="prod.callbacks.rtc/0"]').textContent.includes('30')`)

	// Focus a room button; the list is read again (every room's seq is the
	// read's number) and the button keeps the focus.
	b.Eval(`document.querySelector('button[data-room="r-2040"]').focus(), true`, new(bool))
	var seq string
	b.Eval(`document.querySelector('button[data-room="r-2040"] .room-sub').textContent`, &seq)
	b.WaitFor("a newer room list", `document.querySelector('button[data-room="r-2040"] .room-sub').textContent !== `+browser.JSString(seq))
	var focused string
	b.Eval(`document.activeElement && document.activeElement.dataset.room || ''`, &focused)
	if focused != "r-2040" {
		t.Fatalf("after the list was updated the focus is on %q, want the room button r-2040", focused)
	}

	// The search filters the list.
	b.Eval(`(() => { const s = document.getElementById('room-search'); s.value = 'tutor'; s.dispatchEvent(new Event('input')); return true })()`, new(bool))
	b.WaitFor("the search", `[...document.querySelectorAll('#rooms li')].filter(li => !li.hidden).map(li => li.firstChild.dataset.room).join() === 'prod-tutoring-88'`)

	// Screen readers: a live region, labelled media state and tiles.
	b.WaitFor("an aria-live region", `document.querySelector('[aria-live="polite"]').textContent.includes('r-1001')`)
	var labels []string
	b.Eval(`[...document.querySelectorAll('#stable .tile[data-slot="0"] .icon')].map(i => i.getAttribute('aria-label'))`, &labels)
	if want := []string{"microphone on", "camera on", "screen share off", "spotlight off"}; !slices.Equal(labels, want) {
		t.Fatalf("icon labels of the first tile %v, want %v", labels, want)
	}
	var tileLabel string
	b.Eval(`document.querySelector('#stable .tile[data-slot="0"]').getAttribute('aria-label')`, &tileLabel)
	if !strings.Contains(tileLabel, "host.wang") {
		t.Fatalf("first tile's aria-label %q", tileLabel)
	}

	// Reduced motion: transitions and animations take no time.
	b.Call(b.Session, "Emulation.setEmulatedMedia", map[string]any{
		"features": []map[string]string{{"name": "prefers-reduced-motion", "value": "reduce"}}}, nil)
	b.WaitFor("reduced motion", `matchMedia('(prefers-reduced-motion: reduce)').matches && `+
		`getComputedStyle(document.querySelector('.vol-fill')).transitionDuration === '0s'`)
}
