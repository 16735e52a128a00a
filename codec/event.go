package codec

// Type is a callback event type.
type Type uint8

// The callback event types of a meeting (docs/DESIGN.md §2). The zero Type is not a
// valid type.
const (
	TypeJoin   Type = iota + 1 // Value 0
	TypeLeave                  // Value 0
	TypeAudio                  // Value 0 (off) or 1 (on)
	TypeVideo                  // Value 0 (off) or 1 (on)
	TypeVolume                 // Value 0..999
	TypeRole                   // Value is a Role

	// The board event types (docs/DESIGN.md §8). They never touch a meeting
	// ranking; only the leaderboards count them.
	TypeGift     // Value: amount >= 1 (seed 000)
	TypeScore    // Value: points >= 1 (seed 001)
	TypeReceived // Value 0 (seed 001's actions)
	TypeRead     // Value 0
	TypePassed   // Value 0
	TypeTrade    // Value: amount >= 1; the item id travels in RoomID (seed 002)

	// Meeting types added with the ranking rules (docs/DESIGN.md §10).
	TypeScreenShare // Value 0 (stopped) or 1 (sharing)
	TypeSpotlight   // Value 0 (off) or 1 (in the spotlight)

	// TypeRemove takes a member off one board (Event.Board): its current
	// and retained periods, every window and slice, and with
	// Event.Settled its settled snapshots (docs/DESIGN.md §8
	// "Corrections"). No value.
	TypeRemove

	// TypeIgnored is a well-formed event of a type rostrum does not know,
	// returned only by a Decoder with DecodeConfig.IgnoreUnknownTypes; its
	// name is in Event.TypeName. It never touches a ranking or a board.
	TypeIgnored Type = 255
)

// MaxAmount is the largest magnitude of a gift, score or trade event's
// value (its digits, decimals included): the largest integer a Redis score
// (an IEEE-754 double) holds exactly.
const MaxAmount = 1<<53 - 1

// MaxDecimals is the most decimal places an amount may carry (a board's
// scale is at most 1000).
const MaxDecimals = 3

// Board reports whether t is a board event type (gift, score, received,
// read, passed, trade, remove) rather than a meeting one.
func (t Type) Board() bool { return t.Counted() || t == TypeRemove }

// Counted reports whether a board may count events of type t (every board
// type but remove).
func (t Type) Counted() bool { return t >= TypeGift && t <= TypeTrade }

// Meeting reports whether t is a meeting event type (join, leave, audio,
// video, volume, role, screen_share, spotlight): one that touches a member
// of a meeting ranking.
func (t Type) Meeting() bool {
	return (t >= TypeJoin && t <= TypeRole) || t == TypeScreenShare || t == TypeSpotlight
}

// String returns the wire name of t ("join", "leave", "audio", "video",
// "volume", "role", "gift", "score", "received", "read", "passed",
// "trade", "remove", "screen_share", "spotlight"), or "unknown" for any other value.
func (t Type) String() string {
	switch t {
	case TypeJoin:
		return "join"
	case TypeLeave:
		return "leave"
	case TypeAudio:
		return "audio"
	case TypeVideo:
		return "video"
	case TypeVolume:
		return "volume"
	case TypeRole:
		return "role"
	case TypeGift:
		return "gift"
	case TypeScore:
		return "score"
	case TypeReceived:
		return "received"
	case TypeRead:
		return "read"
	case TypePassed:
		return "passed"
	case TypeTrade:
		return "trade"
	case TypeScreenShare:
		return "screen_share"
	case TypeSpotlight:
		return "spotlight"
	case TypeRemove:
		return "remove"
	}
	return "unknown"
}

// ParseType returns the Type whose wire name is s. Names are case-sensitive.
func ParseType(s string) (Type, bool) { return parseType(s) }

// parseType is ParseType for a string or bytes; it does not allocate.
func parseType[S ~string | ~[]byte](s S) (Type, bool) {
	switch string(s) {
	case "join":
		return TypeJoin, true
	case "leave":
		return TypeLeave, true
	case "audio":
		return TypeAudio, true
	case "video":
		return TypeVideo, true
	case "volume":
		return TypeVolume, true
	case "role":
		return TypeRole, true
	case "gift":
		return TypeGift, true
	case "score":
		return TypeScore, true
	case "received":
		return TypeReceived, true
	case "read":
		return TypeRead, true
	case "passed":
		return TypePassed, true
	case "trade":
		return TypeTrade, true
	case "screen_share":
		return TypeScreenShare, true
	case "spotlight":
		return TypeSpotlight, true
	case "remove":
		return TypeRemove, true
	}
	return 0, false
}

// Role of a member. The ranked roles are 1..4, from student (lowest) to host
// (highest); their number is what the score layout stores. The three excluded
// roles never rank: a member holding one is removed from the room's ranking.
// The zero Role is not a valid role.
type Role uint8

// The member roles (docs/DESIGN.md §2).
const (
	RoleStudent          Role = 1 // "student", the role of a new member
	RoleGuest            Role = 2 // "guest"
	RoleCohost           Role = 3 // "cohost"
	RoleHost             Role = 4 // "host"
	RoleBroadcastControl Role = 5 // "broadcast_control", excluded from the ranking
	RoleScreenPicker     Role = 6 // "screen_picker", excluded from the ranking
	RoleAssistant        Role = 7 // "assistant", excluded from the ranking
)

// Ranked reports whether members holding r take part in the ranking
// (student, guest, cohost, host).
func (r Role) Ranked() bool { return r >= RoleStudent && r <= RoleHost }

// String returns the wire name of r, or "unknown" for a value that is not a
// role.
func (r Role) String() string {
	switch r {
	case RoleStudent:
		return "student"
	case RoleGuest:
		return "guest"
	case RoleCohost:
		return "cohost"
	case RoleHost:
		return "host"
	case RoleBroadcastControl:
		return "broadcast_control"
	case RoleScreenPicker:
		return "screen_picker"
	case RoleAssistant:
		return "assistant"
	}
	return "unknown"
}

// ParseRole returns the Role whose wire name is s. Names are case-sensitive.
func ParseRole(s string) (Role, bool) { return parseRole(s) }

// parseRole is ParseRole for a string or bytes; it does not allocate.
func parseRole[S ~string | ~[]byte](s S) (Role, bool) {
	switch string(s) {
	case "student":
		return RoleStudent, true
	case "guest":
		return RoleGuest, true
	case "cohost":
		return RoleCohost, true
	case "host":
		return RoleHost, true
	case "broadcast_control":
		return RoleBroadcastControl, true
	case "screen_picker":
		return RoleScreenPicker, true
	case "assistant":
		return RoleAssistant, true
	}
	return 0, false
}

// Source is the callback channel an event came through: each has its own
// topic ({env}.callbacks.rtc, .client, .signal). The zero Source is not a
// valid source.
type Source uint8

// The callback sources.
const (
	SourceRTC    Source = iota + 1 // "rtc"
	SourceClient                   // "client"
	SourceSignal                   // "signal"
)

// String returns the wire name of s, or "unknown" for any other value.
func (s Source) String() string {
	switch s {
	case SourceRTC:
		return "rtc"
	case SourceClient:
		return "client"
	case SourceSignal:
		return "signal"
	}
	return "unknown"
}

// ParseSource returns the Source whose wire name is s. Names are
// case-sensitive.
func ParseSource(s string) (Source, bool) { return parseSource(s) }

// parseSource is ParseSource for a string or bytes; it does not allocate.
func parseSource[S ~string | ~[]byte](s S) (Source, bool) {
	switch string(s) {
	case "rtc":
		return SourceRTC, true
	case "client":
		return SourceClient, true
	case "signal":
		return SourceSignal, true
	}
	return 0, false
}

// Event is one decoded, validated callback event. Decoder.Decode only
// returns events that satisfy every rule of docs/DESIGN.md §2.
type Event struct {
	RoomID string // 1..128 bytes of [A-Za-z0-9._:@-]
	UserID string // 1..128 bytes of [A-Za-z0-9._:@-]
	Type   Type
	// Value is audio/video/screen_share/spotlight: 0 or 1; volume: 0..999; role: the Role;
	// gift/score/trade: the amount's digits, non-zero, |Value| ≤
	// MaxAmount (the amount is Value / 10^Decimals); others: 0.
	Value int64
	// Decimals is how many of Value's digits follow the decimal point of
	// a gift, score or trade amount, 0..MaxDecimals, trailing zeros
	// dropped: 12.50 is Value 125, Decimals 1. 0 for every other type.
	Decimals uint8
	TS       int64  // event time, Unix milliseconds, > 0
	Source   Source // from the record, else the topic's
	// ID is the producer's optional event id ("" when absent), same rules
	// as the other ids: a producer that retries sends the same id, and a
	// board counts each id once (docs/DESIGN.md §8).
	ID string
	// TypeName is the type's name for a TypeIgnored event, else "".
	TypeName string
	// Board names the board a remove event applies to ([a-z0-9-], 1..64
	// bytes); "" for every other type.
	Board string
	// Settled: a remove event also takes the member out of the board's
	// settled snapshots. false for every other type.
	Settled bool
}
