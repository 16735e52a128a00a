package stability

// DefaultN is the size of a stable list when none is configured.
const DefaultN = 7

// Merge returns the new stable list from the previous stable list prev (A)
// and the new raw ranking next (B, best first; only its first n members count).
// It appends the result to dst[:0] and returns it, so a caller that keeps dst
// allocates nothing. Member ids must be unique within prev and within next.
//
// The result has min(n, len(next)) members. A member of prev that is still in
// the top n keeps its slot; the slots of departed members, and the slots past
// the end of prev, are filled with the newcomers in next's order. When next
// shrinks below prev's length, members in slots past the new length move down
// into the first free slots, keeping their relative order.
func Merge(dst, prev, next []string, n int) []string {
	if n > len(next) {
		n = len(next)
	}
	if n < 0 {
		n = 0
	}
	next = next[:n]
	dst = dst[:0]
	for i := 0; i < n; i++ {
		dst = append(dst, "")
	}
	// Members of prev that are still in next keep their slot if it exists.
	// N is small (7 by default), so linear scans beat maps and allocate nothing.
	var overflow int // kept members whose old slot is beyond n
	for i, m := range prev {
		if !contains(next, m) {
			continue
		}
		if i < n {
			dst[i] = m
		} else {
			overflow++
		}
	}
	// Fill the free slots in order: first the kept members that lost their slot
	// because the list shrank (in prev's order), then newcomers in next's order.
	slot := 0
	fill := func(m string) {
		for dst[slot] != "" {
			slot++
		}
		dst[slot] = m
	}
	if overflow > 0 {
		for i := n; i < len(prev); i++ {
			if contains(next, prev[i]) {
				fill(prev[i])
			}
		}
	}
	for _, m := range next {
		if !contains(prev, m) {
			fill(m)
		}
	}
	return dst
}

func contains(s []string, m string) bool {
	for _, x := range s {
		if x == m {
			return true
		}
	}
	return false
}
