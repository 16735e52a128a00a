package control

import "github.com/rostrumhq/rostrum/sink"

// keys names the control keys of one room. They start with the room's
// prefix (sink.RoomPrefix), so they share the hash tag, and thus the Redis
// Cluster slot, of the room's meeting keys: one script touches them
// together.
type keys struct {
	Seq  string // hash, no TTL: token (last fencing token), layout (last layout version)
	Rec  string // hash: the current or last recording; no TTL while recording, --room-ttl once stopped
	Hist string // list: the last finished recordings, newest first; --room-ttl
	Out  string // hash, no TTL: the outbox (commands and layout records not yet published)
	Lay  string // hash: the layout (v, body, at); --room-ttl unless persisted
	idem string // prefix of the Idempotency-Key answers; each key lives Config.IdempotencyTTL
}

func roomKeys(env, room string) keys {
	p := sink.RoomPrefix(env, room) + "ctl:"
	return keys{Seq: p + "seq", Rec: p + "rec", Hist: p + "hist", Out: p + "out", Lay: p + "lay", idem: p + "idem:"}
}

// Idem is the key of an Idempotency-Key's answer for action ("start",
// "stop"); "" gives a key that is never written (a script's KEYS must name
// every key it may touch, in the room's slot).
func (k keys) Idem(action, key string) string {
	if key == "" {
		return k.idem + "-"
	}
	return k.idem + action + ":" + key
}

// outboxIndex is the environment's sorted set of requests that may have
// left an outbox entry behind: "<room>\n<nonce>" → Unix ms when the request
// began. It lies outside every room's hash tag (one key for the whole
// environment, like sink's due set), so it is written by its own commands,
// never from a room's script; see outbox.go for the rule that keeps it
// complete.
func outboxIndex(env string) string { return "rostrum:" + env + ":ctl:outbox" }
