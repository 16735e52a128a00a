package docs_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/docs"
)

// kinds are the record kinds of docs/DESIGN.md §2 by their schema file.
var kinds = map[string]string{
	"output-record":     codec.SchemaTopN,
	"dlq-record":        codec.SchemaDLQ,
	"settled-record":    codec.SchemaSettled,
	"recording-command": codec.SchemaCommand,
	"layout-record":     codec.SchemaLayout,
	"callback-event":    codec.SchemaCallback,
}

// pages are the docs/topics pages by the example records they show, files
// under testdata/.
var pages = map[string][]string{
	"callbacks.md":          {"callbacks/valid/volume.json", "callbacks/valid/mixed-array.json"},
	"output.md":             {"records/ranking.topn.json"},
	"dlq.md":                {"records/callbacks.dlq.json"},
	"settled-boards.md":     {"records/boards.settled.json"},
	"recording-commands.md": {"records/recording.command.json", "records/recording.command.stop.json"},
	"layout.md":             {"records/rooms.layout.json"},
}

// schemas compiles docs/schemas and returns each schema by its record kind
// (x-rostrum-schema), checking that every file names one, that its title
// starts with it, and that no object refuses fields it does not know.
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	names, _ := fs.Glob(docs.Schemas, "schemas/*.schema.json")
	raw := map[string]map[string]any{}
	for _, n := range names {
		b, _ := fs.ReadFile(docs.Schemas, n)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if err := c.AddResource(path.Base(n), v); err != nil {
			t.Fatal(err)
		}
		raw[n] = v.(map[string]any)
		if p := closed(v, "#"); p != "" {
			t.Errorf("%s: %s has additionalProperties false: a field added within a version would break a strict consumer", n, p)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".schema.json")
		kind, _ := raw[n]["x-rostrum-schema"].(string)
		if kind == "" || kind != kinds[base] {
			t.Errorf("%s: x-rostrum-schema %q, want %q", n, kind, kinds[base])
		}
		if title, _ := raw[n]["title"].(string); !strings.HasPrefix(title, kind+": ") {
			t.Errorf("%s: title %q does not start with %q", n, title, kind+": ")
		}
		if d, _ := raw[n]["description"].(string); !strings.Contains(d, "never removed or changed in meaning") {
			t.Errorf("%s: description lacks the compatibility rule", n)
		}
		s, err := c.Compile(path.Base(n))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out[kind] = s
	}
	if len(out) != len(kinds) {
		t.Fatalf("schemas for %v, want one for each of %v", slices.Sorted(maps.Keys(out)), slices.Sorted(maps.Values(kinds)))
	}
	return out
}

// closed returns the JSON pointer of a schema object under v that sets
// additionalProperties to false, or "".
func closed(v any, at string) string {
	switch x := v.(type) {
	case map[string]any:
		if ap, ok := x["additionalProperties"].(bool); ok && !ap {
			return at
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if p := closed(x[k], at+"/"+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := closed(e, at+"/"+strconv.Itoa(i)); p != "" {
				return p
			}
		}
	}
	return ""
}

// example is a record of testdata/records, as testenv.WriteExampleRecord
// writes it from a record read back in a test.
type example struct {
	Topic   string            `json:"topic"`
	Key     string            `json:"key"`
	Headers map[string]string `json:"headers"`
	Value   json.RawMessage   `json:"value"`
}

func validate(t *testing.T, s *jsonschema.Schema, b []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return s.Validate(v)
}

// withUnknownField returns the JSON object b with a field added to it and to
// the first entry of its top list, if any: what a later record of the same
// major version may carry.
func withUnknownField(t *testing.T, b []byte) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	v["added-later"] = "a string, as a header's value"
	if top, _ := v["top"].([]any); len(top) > 0 {
		top[0].(map[string]any)["added-later"] = true
	}
	out, _ := json.Marshal(v)
	return out
}

// TestRecordExamples checks the example records of docs/topics, real
// records read back from the in-process broker in the processor's and the
// control API's tests (testdata/records, written with
// ROSTRUM_WRITE_EXAMPLES=1): each carries content-type application/json and
// the rostrum-schema of its topic, its value (a DLQ record: its headers)
// validates against the schema of that kind, also with a field added, and
// each page shows its examples verbatim.
func TestRecordExamples(t *testing.T) {
	byKind := schemas(t)
	topicKind := map[string]string{
		"ranking.topn": codec.SchemaTopN, "callbacks.dlq": codec.SchemaDLQ, "boards.settled": codec.SchemaSettled,
		"recording.commands": codec.SchemaCommand, "rooms.layout": codec.SchemaLayout,
	}
	files, _ := filepath.Glob("../testdata/records/*.json")
	files = append(files, "../testdata/outputs/dlq-record.json")
	seen := map[string]bool{}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var e example
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		_, topic, _ := strings.Cut(e.Topic, ".")
		kind := e.Headers["rostrum-schema"]
		if kind == "" || kind != topicKind[topic] || e.Headers["content-type"] != "application/json" {
			t.Errorf("%s: record of %s with content-type %q and rostrum-schema %q, want application/json and %q",
				f, e.Topic, e.Headers["content-type"], kind, topicKind[topic])
			continue
		}
		seen[kind] = true
		s := byKind[kind]
		if kind == codec.SchemaDLQ {
			// The schema is the envelope's; the value is the rejected
			// record's bytes, whatever they are.
			h, _ := json.Marshal(e.Headers)
			if err := validate(t, s, h); err != nil {
				t.Errorf("%s: headers: %v", f, err)
			}
			if err := validate(t, s, withUnknownField(t, h)); err != nil {
				t.Errorf("%s: headers with one added: %v", f, err)
			}
			delete(e.Headers, "rostrum-offset")
			h, _ = json.Marshal(e.Headers)
			if validate(t, s, h) == nil {
				t.Errorf("the DLQ schema accepts a rejected record without its offset")
			}
			continue
		}
		if err := validate(t, s, e.Value); err != nil {
			t.Errorf("%s: value: %v", f, err)
		}
		if err := validate(t, s, withUnknownField(t, e.Value)); err != nil {
			t.Errorf("%s: value with a field added: %v", f, err)
		}
	}
	for _, kind := range []string{codec.SchemaTopN, codec.SchemaDLQ, codec.SchemaSettled, codec.SchemaCommand, codec.SchemaLayout} {
		if !seen[kind] {
			t.Errorf("testdata/records holds no %s record", kind)
		}
	}
	for page, names := range pages {
		doc, err := os.ReadFile("topics/" + page)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, n := range names {
			b, _ := os.ReadFile("../testdata/" + n)
			if len(b) == 0 || !bytes.Contains(doc, b) {
				t.Errorf("docs/topics/%s does not show testdata/%s verbatim", page, n)
			}
		}
	}
}
