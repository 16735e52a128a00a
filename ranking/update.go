package ranking

// Part is one topic-partition's share of a room's updates in a batch.
type Part struct {
	Topic     string
	Partition int32
	Last      int64          // offset of the last record of this room in this batch
	Members   []MemberUpdate // folded: one entry per user
}

// MemberUpdate is a member's folded update.
type MemberUpdate struct {
	UserID string
	State  MemberState
}

// RoomUpdate is everything a batch changes in one room.
type RoomUpdate struct {
	Room  string
	Parts []Part
}

// Ack says that the output with Seq of Room has been published.
type Ack struct {
	Room string
	Seq  int64
}

// Ranked is a member of a raw top list with its score.
type Ranked struct {
	UserID string
	Score  float64
}

// RoomState is what Apply returns per room: enough for the stable merge.
type RoomState struct {
	Room    string
	Applied bool     // false when every part was already applied (watermarks)
	Seq     int64    // seq of the stored stable list (0: none yet)
	Stable  []string // stored stable list
	Pending []byte   // stored output whose publication was never acknowledged, else nil
	Version int64    // ranking version: bumped by every apply that changes the ranking
	Top     []Ranked // raw top-N, best first
	// HState is the stored hysteresis state (stability.State's text), ""
	// when none.
	HState string
	// StableScores are the current scores of Stable's members, slot by
	// slot; Unranked for a member that is no longer in the ranking.
	StableScores []float64
	// Refused lists the users of this apply that were not admitted because
	// the room already holds the sink's maximum of members.
	Refused []string
}

// Unranked is the StableScores entry of a member that is no longer ranked.
const Unranked = -1.0
