package testenv

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// RecordHeaders returns r's headers by name, every value of a repeated
// name in order, so that a test can assert that a header is there exactly
// once.
func RecordHeaders(r *kgo.Record) map[string][]string {
	h := make(map[string][]string, len(r.Headers))
	for _, kv := range r.Headers {
		h[kv.Key] = append(h[kv.Key], string(kv.Value))
	}
	return h
}

// WriteExampleRecord writes r, a record read back from a topic, to
// testdata/records/<name>.json at the repository's root when the
// environment sets ROSTRUM_WRITE_EXAMPLES=1, and does nothing otherwise.
// The file holds the topic, the key, the headers in their order and the
// value (as JSON when it parses, else as a string): the example records of
// docs/topics/ are these files, and docs.TestRecordExamples checks them
// against docs/schemas/.
func WriteExampleRecord(tb testing.TB, name string, r *kgo.Record) {
	tb.Helper()
	if os.Getenv("ROSTRUM_WRITE_EXAMPLES") != "1" {
		return
	}
	_, file, _, _ := runtime.Caller(0) // internal/testkit/testenv/records.go
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "records", name+".json")
	str := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	var b bytes.Buffer
	b.WriteString("{\"topic\": " + str(r.Topic) + ",\n \"key\": " + str(string(r.Key)) + ",\n \"headers\": {")
	for i, h := range r.Headers {
		if i > 0 {
			b.WriteString(",\n             ")
		}
		b.WriteString(str(h.Key) + ": " + str(string(h.Value)))
	}
	b.WriteString("},\n \"value\": ")
	switch {
	case r.Value == nil:
		b.WriteString("null")
	case json.Valid(r.Value):
		b.Write(r.Value)
	default:
		b.WriteString(str(string(r.Value)))
	}
	b.WriteString("}\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// WantRecordKind fails the test unless r carries each of the two headers
// of every record rostrum produces exactly once: content-type
// application/json and rostrum-schema naming its kind (docs/DESIGN.md §2).
func WantRecordKind(tb testing.TB, r *kgo.Record, kind string) {
	tb.Helper()
	h := RecordHeaders(r)
	if !slices.Equal(h["content-type"], []string{"application/json"}) || !slices.Equal(h["rostrum-schema"], []string{kind}) {
		tb.Fatalf("record of %s (key %q): content-type %q, rostrum-schema %q; want application/json and %s once each",
			r.Topic, r.Key, h["content-type"], h["rostrum-schema"], kind)
	}
}
