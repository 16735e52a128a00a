package control

import (
	"testing"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestRecordHeaders checks the headers of the commands and layout records a
// start, a stop and a layout put publish, and keeps one of each as the
// example records of docs/topics/ (testenv.WriteExampleRecord).
func TestRecordHeaders(t *testing.T) {
	r := newRig(t, nil, nil)
	for _, c := range []struct{ path, body string }{
		{"/v1/rooms/r-1001/recording/start", `{"by":"u-42","params":{"resolution":"1920x1080"}}`},
		{"/v1/rooms/r-1001/recording/stop", `{"by":"u-7"}`},
	} {
		if p := r.do("POST", c.path, c.body); p.Status/100 != 2 {
			t.Fatalf("%s: %d %s", c.path, p.Status, p.Body)
		}
	}
	if p := r.do("PUT", "/v1/rooms/r-1001/layout?persist=true", `{"tiles":4,"resolution":"1280x720","pinned":["u-42"]}`); p.Status != 200 {
		t.Fatalf("layout: %d %s", p.Status, p.Body)
	}
	cmds := r.kafka.ReadAll(commandTopic)
	if len(cmds) != 2 {
		t.Fatalf("%d command records, want 2", len(cmds))
	}
	for _, c := range cmds {
		testenv.WantRecordKind(t, c, "recording.command/1")
	}
	testenv.WriteExampleRecord(t, "recording.command", cmds[0])
	testenv.WriteExampleRecord(t, "recording.command.stop", cmds[1])
	lay := r.kafka.ReadAll(layoutTopic)
	if len(lay) != 1 {
		t.Fatalf("%d layout records, want 1", len(lay))
	}
	testenv.WantRecordKind(t, lay[0], "rooms.layout/1")
	testenv.WriteExampleRecord(t, "rooms.layout", lay[0])
}
