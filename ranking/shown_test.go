package ranking

import (
	"testing"

	"github.com/rostrumhq/rostrum/codec"
)

func TestFlags(t *testing.T) {
	f := codec.MemberScore{Spotlight: 1, Audio: 1, Role: codec.RoleHost, Volume: 999, TS: 1}
	if got, want := Flags(f), uint16(FlagSpotlight|FlagAudio|uint16(codec.RoleHost)<<FlagRoleShift); got != want {
		t.Errorf("Flags(%+v) = %#x, want %#x", f, got, want)
	}
	if got := Flags(codec.MemberScore{Volume: 500, TS: 9}); got != 0 {
		t.Errorf("volume and time alone give flags %#x", got)
	}
}

func TestUrgent(t *testing.T) {
	for _, tt := range []struct {
		f    codec.MemberScore
		want bool
	}{
		{codec.MemberScore{Role: codec.RoleHost}, true},
		{codec.MemberScore{Role: codec.RoleStudent, ScreenShare: 1}, true},
		{codec.MemberScore{Role: codec.RoleStudent, Spotlight: 1}, true},
		{codec.MemberScore{Role: codec.RoleGuest, Audio: 1, Volume: 999, Video: 1}, false},
		{codec.MemberScore{}, false}, // role left out of the rules
	} {
		if got := Urgent(tt.f); got != tt.want {
			t.Errorf("Urgent(%+v) = %v, want %v", tt.f, got, tt.want)
		}
	}
}

func TestAudioLeads(t *testing.T) {
	for _, tt := range []struct {
		rules string
		want  bool
	}{
		{"spotlight,screen_share,audio,volume,video,role", true},
		{"audio,volume", true},
		{"screen_share,audio", true},
		{"volume,audio", false},
		{"role,audio", false},
		{"spotlight,volume", false},
	} {
		r, err := codec.ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		if got := AudioLeads(r); got != tt.want {
			t.Errorf("AudioLeads(%s) = %v, want %v", tt.rules, got, tt.want)
		}
	}
}

func TestDrop(t *testing.T) {
	sharing := codec.MemberScore{ScreenShare: 1, Audio: 1}
	stopped := codec.MemberScore{Audio: 1}
	muted := codec.MemberScore{Video: 1}
	for _, tt := range []struct {
		name       string
		f          codec.MemberScore
		shown      uint16
		audioLeads bool
		want       bool
	}{
		{"still sharing", sharing, Flags(sharing), true, false},
		{"stopped sharing", stopped, Flags(sharing), false, true},
		{"left the spotlight", stopped, FlagSpotlight | FlagAudio, false, true},
		{"shown flags unknown", stopped, 0, false, false},
		{"muted, audio leads", muted, 0, true, true},
		{"muted, audio does not lead", muted, 0, false, false},
		{"turned video off", stopped, FlagAudio | FlagVideo, true, false},
	} {
		if got := Drop(tt.f, tt.shown, tt.audioLeads); got != tt.want {
			t.Errorf("%s: Drop = %v, want %v", tt.name, got, tt.want)
		}
	}
}
