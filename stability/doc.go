// Package stability keeps a room's published top-N from flickering. It has
// two strategies; both keep positions sticky, so a layout service moves as
// few video tiles as possible.
//
// Merge is seed 003's stable merge: A is the previous stable list, B the new
// raw top-N. Members of A that are not in B leave their slots empty; members in
// both keep their slot in A; the empty slots are then filled, in order, by the
// members of B that were not in A, in B's order. The result always holds
// exactly the members of B (the true top-N); only positions are sticky.
//
// Invariants of Merge (each checked by a property test):
//   - set(Merge(A, B)) == set(B[:n]);
//   - a member in both A and B keeps its index from A when that index is < len(result);
//   - Merge is a pure function: identical input gives identical output;
//   - Merge(B', B) == B' whenever set(B') == set(B) (nothing moves without a reason).
//
// Hysteresis also makes membership sticky: a challenger replaces a shown
// member only after holding its place in the raw top-N for a dwell time, or
// at once when it leads by a margin or is urgent (a host); a shown member
// that fell out of the raw top-N stays for a grace time. Removals that the
// ranking itself makes (a member left, its role became excluded, it muted
// while audio ranks first) take effect at once. Its State (the waiting
// challengers and the shown members out of the raw top-N, with the times
// their waits began) is a small value stored with the list; its text form
// is versioned (State.AppendText). Time is a parameter (Unix ms): callers
// choose the clock, and Next says when a decision falls due without new
// input.
//
// Invariants of Hysteresis.Step (each checked by a property test):
//   - the list has min(N, len(raw)) members and no duplicates;
//   - it never holds a member that is not ranked, nor a dropped member out of the raw top-N;
//   - it holds every urgent member of the raw top-N;
//   - a member that stays keeps its slot unless the list shrinks;
//   - once the raw top-N has held still for max(dwell, grace), its set equals the raw set;
//   - Step is pure, and stepping again at the same time changes nothing.
//
// The package imports only the standard library.
package stability
