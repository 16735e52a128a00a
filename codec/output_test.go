package codec_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
)

// AppendOutput writes what encoding/json writes for the same Output, and the
// fields read back are the ones the scores encode.
func TestAppendOutputMatchesJSON(t *testing.T) {
	m := codec.NewMeeting(codec.DefaultEpoch)
	base := codec.DefaultEpoch.UnixMilli()
	members := []codec.MemberScore{
		{Audio: 1, Volume: 512, Video: 1, Role: codec.RoleHost, Spotlight: 1, TS: base + 5000},
		{Audio: 0, Volume: 0, Video: 1, Role: codec.RoleStudent, ScreenShare: 1, TS: base + 9000},
		{Audio: 1, Volume: 999, Video: 0, Role: codec.RoleGuest, TS: base + 1},
	}
	ids := []string{"u-\"quoted\"", "u-2", "u-3"}
	scores := make([]float64, len(members))
	for i, ms := range members {
		s, err := m.Encode(ms)
		if err != nil {
			t.Fatal(err)
		}
		scores[i] = s
	}
	for _, ts := range []int64{0, base + 123} {
		got, err := m.AppendOutput(nil, "r-1", 17, ts, ids, scores)
		if err != nil {
			t.Fatal(err)
		}
		want := codec.Output{RoomID: "r-1", Seq: 17, TS: ts}
		if ts == 0 {
			want.TS = base + 9000 // the newest member's time
		}
		for i, ms := range members {
			want.Top = append(want.Top, codec.OutputMember{UserID: ids[i], Audio: ms.Audio, Volume: ms.Volume,
				Video: ms.Video, Role: ms.Role.String(), ScreenShare: ms.ScreenShare, Spotlight: ms.Spotlight, Score: scores[i]})
		}
		wantJSON, _ := json.Marshal(want)
		if !bytes.Equal(got, wantJSON) {
			t.Errorf("ts %d:\n got %s\nwant %s", ts, got, wantJSON)
		}
	}
	if _, err := m.AppendOutput(nil, "r-1", 1, 0, []string{"u"}, []float64{-3}); err == nil {
		t.Error("a score outside the layout encoded without error")
	}
}

// Under rules that leave fields out, the record leaves them out too: the
// score does not hold them.
func TestAppendOutputOmitsUnrankedFields(t *testing.T) {
	rules, err := codec.ParseRules("screen_share, volume")
	if err != nil {
		t.Fatal(err)
	}
	m, err := codec.NewMeetingRules(codec.DefaultEpoch, rules)
	if err != nil {
		t.Fatal(err)
	}
	base := codec.DefaultEpoch.UnixMilli()
	s, err := m.Encode(codec.MemberScore{ScreenShare: 1, Volume: 7, Audio: 1, Role: codec.RoleHost, TS: base + 10})
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.AppendOutput(nil, "r-1", 1, 5, []string{"u-1"}, []float64{s})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"room_id":"r-1","seq":1,"ts":5,"top":[{"user_id":"u-1","volume":7,"screen_share":1,"score":` +
		strconv.FormatFloat(s, 'f', -1, 64) + `}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
