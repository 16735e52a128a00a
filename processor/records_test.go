package processor_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/internal/testenv"
)

// wantRecordKind fails the test unless r carries each of the two headers
// of every record rostrum produces exactly once: content-type
// application/json and rostrum-schema naming its kind (docs/DESIGN.md §2).
func wantRecordKind(t testing.TB, r *kgo.Record, kind string) {
	t.Helper()
	h := testenv.RecordHeaders(r)
	if !slices.Equal(h["content-type"], []string{"application/json"}) || !slices.Equal(h["rostrum-schema"], []string{kind}) {
		t.Fatalf("record of %s (key %q): content-type %q, rostrum-schema %q; want application/json and %s once each",
			r.Topic, r.Key, h["content-type"], h["rostrum-schema"], kind)
	}
}
