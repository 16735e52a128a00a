// Package stability keeps a room's published top-N from flickering.
//
// Merge is seed 003's stable merge: A is the previous stable list, B the new
// raw top-N. Members of A that are not in B leave their slots empty; members in
// both keep their slot in A; the empty slots are then filled, in order, by the
// members of B that were not in A, in B's order. The result always holds
// exactly the members of B (the true top-N); only positions are sticky, so a
// layout service moves as few video tiles as possible.
//
// Invariants (each checked by a property test):
//   - set(Merge(A, B)) == set(B[:n]);
//   - a member in both A and B keeps its index from A when that index is < len(result);
//   - Merge is a pure function: identical input gives identical output;
//   - Merge(B', B) == B' whenever set(B') == set(B) (nothing moves without a reason).
//
// The package imports only the standard library.
package stability
