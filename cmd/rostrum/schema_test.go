package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// TestConfigSchemaCurrent fails when docs/config.schema.json is not what
// the flags make of it.
func TestConfigSchemaCurrent(t *testing.T) {
	b, err := os.ReadFile("../../docs/config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), string(configSchema()); got != want {
		t.Errorf("docs/config.schema.json differs from the flags; regenerate it: make docs\n%s", firstDiff(got, want))
	}
}

func compileConfigSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(configSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("config.schema.json", v); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validateYAML validates the YAML document text against s.
func validateYAML(t *testing.T, s *jsonschema.Schema, text string) error {
	t.Helper()
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// TestConfigSchemaValidates checks the schema against the config files
// the repository ships, and that it refuses what rostrum refuses.
func TestConfigSchemaValidates(t *testing.T) {
	s := compileConfigSchema(t)
	files := map[string]string{}
	for _, p := range []string{"../../examples/boards.yaml", "../../deployments/overlays/test/rostrum.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = string(b)
	}
	b, err := os.ReadFile("../../deployments/k8s/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	files["configmap.yaml rostrum.yaml"] = cm.Data["rostrum.yaml"]
	files["interpolated"] = "top-n: ${TOP_N:-7}\nredis: ${REDIS}\nstability-dwell: 2s\ndwell: 0\n"
	for name, text := range files {
		if text == "" {
			t.Errorf("%s: empty", name)
			continue
		}
		if err := validateYAML(t, s, text); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, bad := range []string{
		"no-such-key: 1\n",
		"top-n: seven\n",
		"stability-dwell: 3 seconds\n",
		"create-topics: maybe\n",
		"routes: [{env: prod}]\n",
		"boards: [{name: b, events: [gift], member: user_id, kind: total, colour: red}]\n",
	} {
		if err := validateYAML(t, s, bad); err == nil {
			t.Errorf("%q passes the schema", strings.TrimSpace(bad))
		}
	}
}
