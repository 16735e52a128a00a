package boarddef_test

import (
	"encoding/json"
	"testing"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// TestFormatParseUnits: a scale-10 board writes units as exact decimal
// text that is a JSON number, and reads that text back to the same units.
func TestFormatParseUnits(t *testing.T) {
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "refunds", Events: []string{"gift"}, Member: "room_id", Kind: "periodic",
		Period: "hour", AllowNegative: true, Scale: 10}})
	if err != nil {
		t.Fatal(err)
	}
	b := bs[0]
	for _, c := range []struct {
		v    int64
		want string
	}{{0, "0"}, {5, "0.5"}, {-5, "-0.5"}, {120, "12"}, {123456, "12345.6"}} {
		if got := b.FormatUnits(c.v); got != c.want {
			t.Errorf("FormatUnits(%d) = %s, want %s", c.v, got, c.want)
		}
		if back, err := b.ParseUnits(c.want); err != nil || back != c.v {
			t.Errorf("ParseUnits(%s) = %d %v", c.want, back, err)
		}
		var n json.Number
		if json.Unmarshal([]byte(c.want), &n) != nil {
			t.Errorf("%s is not a JSON number", c.want)
		}
	}
}
