package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"
)

func TestSecretPrintsRedacted(t *testing.T) {
	const pw = "hunter2-Sup3r"
	s := Secret{pw}
	type holder struct {
		Password Secret `json:"password" yaml:"password"`
		Ptr      *Secret
	}
	h := holder{Password: s, Ptr: &s}
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%10s"} {
		out = append(out, fmt.Sprintf(verb, s), fmt.Sprintf(verb, h), fmt.Sprintf(verb, &s))
	}
	j, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	lg, err := NewLogger(&logs, "json", "debug", nil)
	if err != nil {
		t.Fatal(err)
	}
	lg.Info("x", zap.Any("any", s), zap.Stringer("str", s), zap.Reflect("reflect", h), zap.Any("holder", h))
	out = append(out, string(j), string(y), logs.String(), fmt.Sprint(ScrubError(fmt.Errorf("dial: %s", pw), s)))
	for _, o := range out {
		if strings.Contains(o, pw) {
			t.Errorf("printed form holds the password: %s", o)
		}
	}
	if !strings.Contains(string(j), `"password":"[redacted]"`) || !strings.Contains(logs.String(), redacted) {
		t.Errorf("want [redacted]; JSON %s, log %s", j, logs.String())
	}
	if s.Reveal() != pw || (Secret{}).String() != "" {
		t.Errorf("reveal = %q, empty String = %q", s.Reveal(), Secret{}.String())
	}
}
