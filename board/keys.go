package board

import (
	"strconv"
	"strings"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// Key building for the board keys listed in doc.go ("Redis keys"), for the
// keys whose names carry a period, window or slice; the board's own keys are
// Store.prefix + a fixed suffix. The scripts build the same names from P.
//
// The slice sets of rolling and windows boards (lua/slices.lua). Each
// window keeps slices of its own length, q times the board's slice; the
// windows of one q share one slice set:
//
//	q = 1 (the board's slice)   P+"s"               zset  slices held (score = slice index)
//	                            P+"s:<slice>"       hash  member → sum of the slice
//	                            P+"s:<slice>:i"     set   event ids counted in the slice
//	q > 1 (a window's own)      P+"q<q>:s", P+"q<q>:s:<slice>", P+"q<q>:s:<slice>:i"
//
// where P is Store.prefix and <slice> counts slices of that set's length.
// A board without per-window slices has only the q = 1 set.
//
// A rolling board keeps each slice's sums in its slice hash. A windows
// board has no slice hashes: each member's slices are packed into its
// state in P+"m" (lua/packed.lua), the expiry index P+"e" (hash: time →
// the members whose first slice leaves a window then) tells Expire which
// members to read, and its slice sets list only the slices that have an
// id set.

// The periods of a periodic board. Each period has a hash tag of its own,
// the board's name and the label joined by "@" (board names have no "@"),
// so that a board's periods spread over a Redis Cluster's masters:
//
//	rostrum:<env>:board:{<name>@<label>}:<part>
//
// and everything one period's scripts touch is under it: besides its
// ranking, member states and id set, its own applied ranges and
// generation ("w", the layout of the board's "w" hash), counters ("n"),
// settle state ("st"), snapshot ("S", "S:i", "S:j") and deferred
// removals ("d"). The board's own tag keeps what spans periods: its "w"
// hash, whose "gen" field alone marks the board as adopted, and the settle
// state, outbox and index of settled periods.

// periodPrefix returns the prefix of the keys of board b's period label;
// its part names follow.
func (s *Store) periodPrefix(b *boarddef.Board, label string) string {
	return "rostrum:" + s.env + ":board:{" + b.Name() + "@" + label + "}:"
}

// periodKey returns the key of board b's period label: part "z" (the
// ranking), "m" (member states), "i" (event ids), "w" (applied ranges,
// generation) or "n" (counters).
func (s *Store) periodKey(b *boarddef.Board, label, part string) string {
	return s.periodPrefix(b, label) + part
}

// registryKey returns the key of the environment's registry of the
// periods of its periodic boards: "<board>@<label>" → the Unix ms
// at which the period's slot expires (registry.go). Its hash tag is the
// name of the environment's generation marker (sink/generation.go,
// docs/DESIGN.md §7), so Redis Cluster keeps the registry on the marker's
// slot: a node that loses the registry loses the marker with it, which
// makes every processor adopt a new generation and replay its log. A
// registry anywhere else could be lost together with a period it lists,
// and the period would then look new.
func (s *Store) registryKey() string {
	return "rostrum:" + s.env + ":{rostrum:" + s.env + ":generation}:board-periods"
}

// registryMember returns board b's period label as a registry member.
func registryMember(b *boarddef.Board, label string) string { return b.Name() + "@" + label }

// windowKey returns the key of a rolling or windows board's window j
// ranking; the member states of every window are in P+"m".
func windowKey(P string, j int) string { return P + "z:" + strconv.Itoa(j) }

// sliceSetKey returns the key of the zset of slices kept q board slices
// long.
func sliceSetKey(P string, q int64) string {
	if q == 1 {
		return P + "s"
	}
	return P + "q" + strconv.FormatInt(q, 10) + ":s"
}

// sliceKey returns the key of slice s (in units of q board slices): the
// hash member → sum; its event ids' set is sliceKey + ":i".
func sliceKey(P string, q, s int64) string {
	return sliceSetKey(P, q) + ":" + strconv.FormatInt(s, 10)
}

// idSetKey returns the key of the set of event ids counted in slice s of
// the slice set of ratio q.
func idSetKey(P string, q, s int64) string { return sliceKey(P, q, s) + ":i" }

// expiryKey returns the key of a windows board's expiry index: the hash
// time (Unix ms, before grace) → the members whose first slice leaves a
// window then (lua/packed.lua).
func expiryKey(P string) string { return P + "e" }

// sliceSets returns the distinct slice ratios of board b's windows, in
// window order: one slice set each.
func sliceSets(b *boarddef.Board) []int64 {
	var out []int64
	for j := range b.NumWindows() {
		q := b.WindowRatio(j)
		seen := false
		for _, x := range out {
			seen = seen || x == q
		}
		if !seen {
			out = append(out, q)
		}
	}
	return out
}

// windowsArg is the scripts' windows argument of board b: "k" when every
// window keeps the board's slices, else "k:q1,…,qk".
func windowsArg(b *boarddef.Board) string {
	n := strconv.Itoa(b.NumWindows())
	if own := sliceSets(b); len(own) == 0 || len(own) == 1 && own[0] == 1 {
		return n // the layout of boards without per-window slices
	}
	qs := make([]string, b.NumWindows())
	for j := range qs {
		qs[j] = strconv.FormatInt(b.WindowRatio(j), 10)
	}
	return n + ":" + strings.Join(qs, ",")
}

// slotExpireAt returns when the slot of periodic board b's period
// ending at end (Unix ms), whose ranking keys expire at live, is no longer
// written: its applied ranges, generation and counters expire then. A
// board that settles keeps them as long as the period's snapshot, which a
// removal from settled snapshots still writes.
func slotExpireAt(b *boarddef.Board, live, end int64) int64 {
	if !b.Settles() {
		return live
	}
	snap := end + (time.Duration(b.SettleRetention())*b.Unit().MaxSpan() + b.Grace()).Milliseconds()
	return max(live, snap)
}

// lengthsArg is board b's lengths argument of the scripts
// (lua/packed.lua) when it is a windows board: "slicems:n1,…,nk", the
// board's slice in ms and each window's length in its own slices; "" for
// other kinds.
func lengthsArg(b *boarddef.Board) string {
	if b.Kind() != boarddef.Windows {
		return ""
	}
	ns := make([]string, b.NumWindows())
	for j, n := range b.WindowSlices() {
		ns[j] = strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(b.Slice().Milliseconds(), 10) + ":" + strings.Join(ns, ",")
}

// floorDiv returns a / b rounded toward −∞: the index of the slice (or
// day) of length b holding a, before 1970 too.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
