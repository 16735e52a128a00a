package traceparent_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/rostrumhq/rostrum/internal/traceparent"
)

func TestParse(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{good, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"", false},
		{good[:54], false},
		{good + "-", false},
		{"ff" + good[2:], false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false},
		{"0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
	} {
		sc, ok := traceparent.Parse([]byte(tc.in))
		if ok != tc.ok {
			t.Errorf("Parse(%q) ok = %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if ok && (!sc.IsValid() || !sc.IsRemote()) {
			t.Errorf("Parse(%q) = %v: not a valid remote span context", tc.in, sc)
		}
	}
	sc, _ := traceparent.Parse([]byte(good))
	if got := string(traceparent.Format(sc)); got != good {
		t.Errorf("Format(Parse(%q)) = %q", good, got)
	}
}

func TestChildAndNew(t *testing.T) {
	parent, _ := traceparent.Parse([]byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
	c := traceparent.Child(parent)
	if c.TraceID() != parent.TraceID() || c.SpanID() == parent.SpanID() || !c.IsValid() || c.TraceFlags() != parent.TraceFlags() {
		t.Errorf("Child(%v) = %v: want the same trace and flags, a new span", parent, c)
	}
	a, b := traceparent.New(), traceparent.New()
	if !a.IsValid() || !a.IsSampled() || a.TraceID() == b.TraceID() {
		t.Errorf("New() = %v, %v: want valid, sampled, distinct traces", a, b)
	}
	if _, ok := traceparent.Parse(traceparent.Format(a)); !ok {
		t.Errorf("Format(New()) = %q does not parse", traceparent.Format(a))
	}
}

// otelParse is the oracle: the OpenTelemetry SDK's own W3C propagator.
func otelParse(s string) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	return trace.SpanContextFromContext(ctx)
}

// FuzzParse checks that Parse never panics and agrees with the
// OpenTelemetry propagator, except that it refuses a version 00 value
// followed by a dash, which the specification does not allow and the
// propagator lets through; and that what it accepts formats back to the
// same value for version 00.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03-x",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
		"", "00", "ff-",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, ok := traceparent.Parse(b)
		want := otelParse(string(b))
		if !ok {
			if want.IsValid() && !(strings.HasPrefix(string(b), "00-") && len(b) > traceparent.Len) {
				t.Fatalf("Parse(%q) refused; the propagator reads %v", b, want)
			}
			return
		}
		if !sc.Equal(want) {
			t.Fatalf("Parse(%q) = %v; the propagator reads %v", b, sc, want)
		}
		if b[0] == '0' && b[1] == '0' {
			if got := traceparent.Format(sc); string(got) != string(b) {
				t.Fatalf("Format(Parse(%q)) = %q", b, got)
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	v := []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := traceparent.Parse(v); !ok {
			b.Fatal("refused")
		}
	}
}
