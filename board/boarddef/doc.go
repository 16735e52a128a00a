// Package boarddef defines rostrum's leaderboards (docs/DESIGN.md §8): a
// board's configuration as written under boards: (Config), its validation
// and compilation into an immutable Board (Compile), and what follows from
// a definition alone: the calendar periods of a periodic board and their
// labels, the UTC-aligned slices and windows of rolling and windows
// boards, when an event becomes late, the 53-bit first-reached score
// layout, decay weights and bases, values in units of 1/scale, and the
// callback record that takes a member off a board.
//
// Package board keeps the boards' state in Redis and imports this package;
// nothing here imports it. The name says where the line runs: boarddef is
// what a board is, board is where its state is kept. (A name after one of
// its parts, such as period, would hide the configuration, the score
// layout, decay and units it holds as well.)
//
// # Invariants
//
//   - No Redis, no Kafka, no I/O: the package imports codec and the
//     standard library only (TestNoRedisOrKafka checks its whole
//     dependency graph). Compile reads the zone database
//     (time.LoadLocation) and the clock once, for the horizon check;
//     RemoveRecord reads crypto/rand. Every other time is an argument.
//   - A Board is immutable once compiled and safe for concurrent use.
//   - A period or slice is a function of the event time and the board,
//     never of the clock, so a replay puts an event where the original run
//     did. Period keys never decrease with time, and the labels of one
//     board sort in time order.
//   - Slices are aligned to UTC: slice s of length g holds the event times
//     [s·g, (s+1)·g) in Unix milliseconds.
//   - Compile accepts a board only when its score fits 53 bits: the total
//     above the first-reached time, which spans the longest period of its
//     unit (periodic) or runs until a horizon at least a year away
//     (rolling, windows).
//   - Compile's errors name the field: "boards[1].slice: 7m does not
//     divide a day".
package boarddef
