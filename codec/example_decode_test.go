package codec_test

import (
	"fmt"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

func ExampleDecoder_Decode() {
	d := codec.NewDecoder(codec.DecodeConfig{}) // default limits
	now := time.UnixMilli(1763700000500)

	// One record of the client topic holding two events.
	value := []byte(`[
		{"room_id":"r-1001","user_id":"u-42","type":"volume","value":512,"ts":1763700000123},
		{"room_id":"r-1001","user_id":"u-7","type":"role","value":"cohost","ts":1763700000124,"source":"signal"}
	]`)
	events, err := d.Decode(nil, value, codec.SourceClient, now)
	if err != nil {
		panic(err)
	}
	for _, e := range events {
		fmt.Println(e.RoomID, e.UserID, e.Type, e.Value, e.TS, e.Source)
	}

	// A bad record is rejected whole, with a one-line reason for the DLQ.
	_, err = d.Decode(events[:0], []byte(`{"room_id":"r-1001","user_id":"u-42","type":"volume","value":1000,"ts":1763700000125}`), codec.SourceRTC, now)
	fmt.Println(err)
	// Output:
	// r-1001 u-42 volume 512 1763700000123 client
	// r-1001 u-7 role 3 1763700000124 signal
	// value: volume must be 0..999, got 1000
}
