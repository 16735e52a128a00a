package sink

import "strings"

// Keys names the Redis keys of one room. Every key carries the room in one
// hash tag ({…}), so all of a room's keys live in one Redis Cluster slot and
// one script can touch them together.
type Keys struct {
	Members string // hash: user id → packed MemberState
	Ranking string // sorted set: ranked user id → codec score
	Stable  string // hash: seq, list (comma-separated ids), v (ranking version), pending and out (an output not yet acknowledged as published), h (hysteresis state, stability.State's text), mv (state token), r (rules version), "topic/partition" → last applied offset (the watermarks)
}

// RoomKeys returns the keys of room in environment env:
//
//	rostrum:{env}:{room}:m|z|s
//
// (the braces around the room are the hash tag; the env is literal text).
func RoomKeys(env, room string) Keys {
	// One string holds the three names, so that building them is one
	// allocation: a room's keys are built for every apply.
	var b strings.Builder
	n := len("rostrum:") + len(env) + len(":{") + len(room) + len("}:") + 1
	b.Grow(3 * n)
	for _, kind := range []byte("mzs") {
		b.WriteString("rostrum:")
		b.WriteString(env)
		b.WriteString(":{")
		b.WriteString(room)
		b.WriteString("}:")
		b.WriteByte(kind)
	}
	all := b.String()
	return Keys{Members: all[:n], Ranking: all[n : 2*n], Stable: all[2*n:]}
}

// RoomPrefix is the text every key of room in env starts with,
// "rostrum:{env}:{room}:" (the room in braces is the hash tag). Other
// packages that keep per-room keys (control) name them with it, so that
// they share the room's Redis Cluster slot.
func RoomPrefix(env, room string) string { return "rostrum:" + env + ":{" + room + "}:" }

// dueKey is the environment's sorted set of rooms whose hysteresis has a
// deadline: room id → the Unix ms at which it must be stepped again even
// without events. It lies outside every room's hash tag (one key for the
// whole environment), so it is written by its own commands, never from a
// room's script.
func dueKey(env string) string { return "rostrum:" + env + ":due" }
