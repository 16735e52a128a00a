// Package flicker measures how much a room's shown top-N flickers: it
// takes the deterministic meetings of the named scenarios of package
// internal/meeting (a lecture with a noisy audience, a lively discussion, a
// town hall with hand-overs of the host role), replays each through three
// strategies — the raw top-N in rank order, seed 003's merge
// (stability.Merge) and rostrum's hysteresis (stability.Hysteresis) — on a
// simulated clock, and reports per scenario and strategy:
//
//   - visible changes per minute: tiles replaced (a member enters or leaves
//     the list) plus tiles moved (a member that stays changes slot);
//   - time to appear: from when a member enters the raw top-N for a stint of
//     at least MinStint (it truly belongs) until it is shown, median and p95;
//   - stale share: the share of tile time showing a member that has been out
//     of the raw top-N for a stint of at least MinStint (it truly no longer
//     belongs).
//
// The replay reads the raw top-N and merges every Batch of event time, as the
// processor does per poll batch, and steps the hysteresis also at its own
// deadlines, as the processor's timer does. Everything runs on the events'
// clock: the same Config gives the same Report on any machine, so tests may
// assert its numbers. `rostrum-dev bench --flicker` prints the report.
//
// A room's members are the processor's ranking.MemberState, folded with
// MemberState.Apply and scored with MemberState.Score; the hysteresis reads
// them through the processor's rules of a shown member (ranking.Urgent,
// ranking.Drop, ranking.Flags), so the replay ranks as production does.
package flicker
