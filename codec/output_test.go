package codec_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
)

// AppendOutput writes what encoding/json writes for the same Output, and the
// fields read back are the ones the scores encode.
func TestAppendOutputMatchesJSON(t *testing.T) {
	m := codec.NewMeeting(codec.DefaultEpoch)
	base := codec.DefaultEpoch.UnixMilli()
	members := []codec.MemberScore{
		{Audio: 1, Volume: 512, Video: 1, Role: codec.RoleHost, TS: base + 5000},
		{Audio: 0, Volume: 0, Video: 1, Role: codec.RoleStudent, TS: base + 9000},
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
				Video: ms.Video, Role: ms.Role.String(), Score: scores[i]})
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
