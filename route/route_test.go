package route

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		specs []string
		want  []Rule
	}{
		{[]string{"prod=^p-"}, []Rule{{"prod", "^p-"}}},
		{[]string{"prod=^p-,gray=^g-"}, []Rule{{"prod", "^p-"}, {"gray", "^g-"}}},
		{[]string{"prod=^p-", "gray=^g-, test=^t-"}, []Rule{{"prod", "^p-"}, {"gray", "^g-"}, {"test", "^t-"}}},
		{[]string{"prod=^r{1,3}-,gray=^g-"}, []Rule{{"prod", "^r{1,3}-"}, {"gray", "^g-"}}},
		{[]string{"prod=a=b"}, []Rule{{"prod", "a=b"}}},
		{[]string{""}, nil},
	} {
		got, err := Parse(tc.specs...)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.specs, got, err, tc.want)
		}
	}
	if _, err := Parse("noequals"); err == nil {
		t.Error("Parse accepted a rule without =")
	}
}

func TestTableFirstMatchAndDefault(t *testing.T) {
	rules, _ := Parse("prod=^p-,gray=^p-gray-|^g-")
	tb, err := New(rules, "test")
	if err != nil {
		t.Fatal(err)
	}
	for room, want := range map[string]string{
		"p-1":      "prod",
		"p-gray-1": "prod", // first match wins
		"g-7":      "gray",
		"x-1":      "test",
	} {
		if got, ok := tb.Env(room); !ok || got != want {
			t.Errorf("Env(%q) = %q, %v; want %q", room, got, ok, want)
		}
		if got, ok := tb.EnvBytes([]byte(room)); !ok || got != want {
			t.Errorf("EnvBytes(%q) = %q, %v; want %q", room, got, ok, want)
		}
	}
	if !tb.Belongs("gray", "g-7") || tb.Belongs("prod", "g-7") {
		t.Error("Belongs disagrees with Env")
	}
	if got := tb.Envs(); !reflect.DeepEqual(got, []string{"prod", "gray", "test"}) {
		t.Errorf("Envs = %v", got)
	}

	noDef, _ := New(rules, "")
	if env, ok := noDef.Env("x-1"); ok {
		t.Errorf("without default: Env(x-1) = %q, true", env)
	}
	if env, ok := noDef.EnvBytes([]byte("x-1")); ok {
		t.Errorf("without default: EnvBytes(x-1) = %q, true", env)
	}
	var nilT *Table
	if _, ok := nilT.EnvBytes([]byte("p-1")); ok {
		t.Error("a nil table routed a room in bytes")
	}
	if _, ok := nilT.Env("p-1"); ok || !nilT.Empty() {
		t.Error("a nil table routed a room")
	}
}

func TestNewErrorsNameTheRule(t *testing.T) {
	for _, tc := range []struct {
		rules []Rule
		def   string
		want  string
	}{
		{[]Rule{{"prod", "("}}, "", "--route prod=("},
		{[]Rule{{"pr od", "^p"}}, "", "invalid character"},
		{[]Rule{{"prod", ""}}, "", "empty pattern"},
		{nil, "a.b", "--route-default"},
	} {
		_, err := New(tc.rules, tc.def)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%v, %q) = %v, want an error with %q", tc.rules, tc.def, err, tc.want)
		}
	}
}

func TestFlag(t *testing.T) {
	var f Flag
	for _, v := range []string{"prod=^p-,gray=^g-", "test=^t-"} {
		if err := f.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	rules, err := f.Rules()
	if err != nil || len(rules) != 3 || rules[2].Env != "test" {
		t.Fatalf("Rules = %v, %v", rules, err)
	}
	if err := f.Set("bad"); err == nil {
		t.Error("Set accepted a rule without =")
	}
}
