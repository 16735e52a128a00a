package model_test

import (
	"fmt"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/model"
)

func Example() {
	m := model.New(codec.NewMeeting(codec.DefaultEpoch))
	const ts = int64(1763700000000)
	for _, e := range []codec.Event{
		{RoomID: "r-1", UserID: "u-1", Type: codec.TypeRole, Value: int64(codec.RoleHost), TS: ts},
		{RoomID: "r-1", UserID: "u-2", Type: codec.TypeAudio, Value: 1, TS: ts + 5},
		{RoomID: "r-1", UserID: "u-3", Type: codec.TypeVolume, Value: 800, TS: ts + 9},
		// Older than u-3's volume event: changes nothing.
		{RoomID: "r-1", UserID: "u-3", Type: codec.TypeVolume, Value: 10, TS: ts + 2},
		// A leave wins a tie with an implicit join at the same millisecond.
		{RoomID: "r-1", UserID: "u-4", Type: codec.TypeVideo, Value: 1, TS: ts + 7},
		{RoomID: "r-1", UserID: "u-4", Type: codec.TypeLeave, TS: ts + 7},
	} {
		m.Apply(e)
	}
	for _, mem := range m.Ranking("r-1") {
		fmt.Println(mem.UserID, mem.Audio, mem.Volume, mem.Video, mem.Role)
	}
	// Output:
	// u-2 1 0 0 student
	// u-3 0 800 0 student
	// u-1 0 0 0 host
}
