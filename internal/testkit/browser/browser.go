// Package browser drives Debian's headless chromium over the DevTools
// protocol on a pipe (--remote-debugging-pipe), with no client library, for
// rostrum's browser tests and screenshots. A test without chromium skips
// with a message saying how to install it.
package browser

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// --dump-dom with
// --virtual-time-budget does not work for this page: virtual time stands
// still while a request is open, and the page's event stream never ends.

// ChromiumPath returns Debian's chromium, or skips the test without it.
func ChromiumPath(t testing.TB) string {
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

// Browser is a headless chromium with one page, driven over a pipe.
type Browser struct {
	t       testing.TB
	cmd     *exec.Cmd
	stderr  bytes.Buffer
	in      *os.File // chromium reads commands here (its fd 3)
	msgs    chan map[string]json.RawMessage
	nextID  int
	Session string // the page's DevTools session
}

// Start starts chromium with a window of w×h pixels showing url.
func Start(t testing.TB, url string, w, h int) *Browser {
	t.Helper()
	bin := ChromiumPath(t)
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &Browser{t: t, in: cmdW, msgs: make(chan map[string]json.RawMessage, 64)}
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
	b.Call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var att struct{ SessionID string }
	b.Call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.Session = att.SessionID
	b.Call(b.Session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": w, "height": h, "deviceScaleFactor": 1, "mobile": false}, nil)
	b.Call(b.Session, "Page.navigate", map[string]any{"url": url}, nil)
	return b
}

// Call sends one DevTools command and decodes its result into out.
func (b *Browser) Call(session, method string, params any, out any) {
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

// Eval evaluates a JavaScript expression in the page and decodes its value.
func (b *Browser) Eval(expr string, out any) {
	b.t.Helper()
	var res struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct{ Text string }
	}
	b.Call(b.Session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		b.t.Fatalf("evaluate %s: %s", expr, res.ExceptionDetails.Text)
	}
	if err := json.Unmarshal(res.Result.Value, out); err != nil {
		b.t.Fatalf("evaluate %s: %v in %s", expr, err, res.Result.Value)
	}
}

// WaitFor evaluates expr every 100ms until it is true, for up to 30 seconds
// (generous: the assertion is about what appears, not how fast).
func (b *Browser) WaitFor(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		b.Eval("Boolean("+expr+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var dom string
			b.Eval("document.documentElement.outerHTML", &dom)
			b.t.Fatalf("waiting for %s: %s is still false; page:\n%s", what, expr, dom)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// JSString quotes s as a JavaScript string literal.
func JSString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
