package ranking

import "github.com/rostrumhq/rostrum/codec"

// The rules of a shown member: what the stable step feeds the hysteresis
// (stability.Member.Urgent, stability.Standing.Drop) and what of a listed
// member republishes the list. They read a member's decoded score
// (codec.Meeting.Decode), so a field the ranking rules leave out counts as
// 0, as the score it ranks by holds it.

// Flags of a shown member that the output record shows and whose change
// republishes the list (docs/DESIGN.md §10): everything its score holds but
// the volume and the time. Volume changes alone never republish.
const (
	FlagSpotlight   = 1 << 0
	FlagScreenShare = 1 << 1
	FlagAudio       = 1 << 2
	FlagVideo       = 1 << 3
	FlagRoleShift   = 4 // role: 3 bits

	// FlagsPriority are the flags that take a tile at once (Urgent) while
	// set, and let it go at once when cleared (Drop).
	FlagsPriority = FlagSpotlight | FlagScreenShare
)

// Flags packs the republishing fields of a decoded score.
func Flags(f codec.MemberScore) uint16 {
	return uint16(f.Spotlight)*FlagSpotlight | uint16(f.ScreenShare)*FlagScreenShare |
		uint16(f.Audio)*FlagAudio | uint16(f.Video)*FlagVideo | uint16(f.Role)<<FlagRoleShift
}

// Urgent reports whether a member of the raw top-N with the decoded score f
// takes a tile at once: a host, a presenter sharing their screen and a
// member in the spotlight never wait the dwell.
func Urgent(f codec.MemberScore) bool {
	return f.Role == codec.RoleHost || f.ScreenShare == 1 || f.Spotlight == 1
}

// AudioLeads reports whether audio is the leading field of the rules for a
// member who is neither spotlighted nor sharing: only those two flags may
// come before it. A muted member then ranks below every unmuted one, so a
// shown member that mutes may leave at once (see Drop).
func AudioLeads(r codec.Rules) bool {
	for _, f := range r {
		switch f {
		case codec.RuleAudio:
			return true
		case codec.RuleSpotlight, codec.RuleScreenShare:
		default:
			return false
		}
	}
	return false
}

// Drop reports whether a shown member with the decoded score f leaves the
// list at once (stability.Standing.Drop): it is muted while audio leads
// the rules (audioLeads, see AudioLeads), or it stopped sharing or left the
// spotlight since the list was published with its flags shown (0 when
// unknown).
func Drop(f codec.MemberScore, shown uint16, audioLeads bool) bool {
	return (audioLeads && f.Audio == 0) || shown&FlagsPriority&^Flags(f) != 0
}
