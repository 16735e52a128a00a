package codec

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// RuleField is a member field the meeting ranking can rank on.
type RuleField uint8

// The fields of ranking rules (docs/DESIGN.md §10). Their wire names are
// the callback types that set them.
const (
	RuleSpotlight   RuleField = iota + 1 // "spotlight": 0 or 1, 1 bit
	RuleScreenShare                      // "screen_share": 0 or 1, 1 bit
	RuleAudio                            // "audio": 0 or 1, 1 bit
	RuleVolume                           // "volume": 0..999, 10 bits
	RuleVideo                            // "video": 0 or 1, 1 bit
	RuleRole                             // "role": student 1 .. host 4, 3 bits
)

// ruleFields lists every RuleField in the default order.
var ruleFields = [...]RuleField{RuleSpotlight, RuleScreenShare, RuleAudio, RuleVolume, RuleVideo, RuleRole}

// String returns the field's name in the ranking setting.
func (f RuleField) String() string {
	switch f {
	case RuleSpotlight:
		return "spotlight"
	case RuleScreenShare:
		return "screen_share"
	case RuleAudio:
		return "audio"
	case RuleVolume:
		return "volume"
	case RuleVideo:
		return "video"
	case RuleRole:
		return "role"
	}
	return "RuleField(" + strconv.Itoa(int(f)) + ")"
}

// Bits returns the width of the field in a meeting score.
func (f RuleField) Bits() uint8 {
	switch f {
	case RuleVolume:
		return 10
	case RuleRole:
		return 3
	}
	return 1
}

// Rules are the ranking rules of the meeting score: the fields it ranks on,
// most significant first. The member's newest event time always follows
// them as the last field. A field not listed takes no bits and is not
// ranked on. The zero Rules ranks on time alone.
type Rules []RuleField

// DefaultRules is the rank order unless configured otherwise: spotlight,
// then screen sharing, then seed 003's order (audio, volume, video, role).
// With nobody spotlighted or sharing it ranks exactly as LegacyRules.
func DefaultRules() Rules {
	return Rules{RuleSpotlight, RuleScreenShare, RuleAudio, RuleVolume, RuleVideo, RuleRole}
}

// LegacyRules are the rules of rostrum's scores before ranking rules were
// configurable (audio, volume, video, role; 1 ms time).
func LegacyRules() Rules { return Rules{RuleAudio, RuleVolume, RuleVideo, RuleRole} }

// ParseRules parses the ranking setting: field names separated by commas,
// most significant first, spaces around names ignored. An empty string is
// refused (it would rank on time alone); so are an unknown name and a name
// given twice, with an error naming it.
func ParseRules(s string) (Rules, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty: list the fields to rank on, for example %s", DefaultRules())
	}
	var r Rules
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		f, ok := parseRuleField(name)
		if !ok {
			return nil, fmt.Errorf("unknown field %q (want spotlight, screen_share, audio, volume, video or role)", name)
		}
		if r.Has(f) {
			return nil, fmt.Errorf("field %q is listed twice", name)
		}
		r = append(r, f)
	}
	return r, nil
}

func parseRuleField(name string) (RuleField, bool) {
	for _, f := range ruleFields {
		if f.String() == name {
			return f, true
		}
	}
	return 0, false
}

// Has reports whether the rules rank on f.
func (r Rules) Has(f RuleField) bool {
	for _, g := range r {
		if g == f {
			return true
		}
	}
	return false
}

// Bits returns the bits the rules' fields take, time excluded.
func (r Rules) Bits() int {
	n := 0
	for _, f := range r {
		n += int(f.Bits())
	}
	return n
}

// String returns the rules as the setting spells them, for example
// "spotlight,screen_share,audio,volume,video,role".
func (r Rules) String() string {
	names := make([]string, len(r))
	for i, f := range r {
		names[i] = f.String()
	}
	return strings.Join(names, ",")
}

// Equal reports whether r and o list the same fields in the same order.
func (r Rules) Equal(o Rules) bool {
	if len(r) != len(o) {
		return false
	}
	for i := range r {
		if r[i] != o[i] {
			return false
		}
	}
	return true
}

// rulesVersion names a score layout: the rules, the time unit and the
// epoch. Two meetings with the same version give every member the same
// score. It is stored with each room (docs/DESIGN.md §7), so it is short:
// 8 hex digits of a CRC-32 of the layout's description.
func rulesVersion(r Rules, unitMS, epochMS int64) string {
	desc := r.String() + "/" + strconv.FormatInt(unitMS, 10) + "ms/" + strconv.FormatInt(epochMS, 10)
	return fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(desc)))
}
