package sink

// SetSegmentRooms sets n rooms per segment of the store's round trips (see
// Store.roundTrip), so that tests of a few rooms send several segments, and
// have more than one in flight.
func SetSegmentRooms(s *Store, n int) { s.perSegment = n }
