package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rostrumhq/rostrum/metrics"
)

// scrape serves GET /metrics from p's Handler and parses the text exposition.
func scrape(tb testing.TB, p *metrics.Processor) map[string]*dto.MetricFamily {
	tb.Helper()
	rec := httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET /metrics: status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		tb.Fatalf("GET /metrics: Content-Type %q, want text/plain", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		tb.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// labelString writes the labels of m as "k=v,k=v" in name order, leaving
// out the env label.
func labelString(m *dto.Metric) string {
	var kv []string
	for _, l := range m.GetLabel() {
		if l.GetName() != "env" {
			kv = append(kv, l.GetName()+"="+l.GetValue())
		}
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// sample returns the metric of family name whose labels (env aside) are
// exactly want, written "k=v,k=v" in name order; ok is false when there is
// none.
func sample(fams map[string]*dto.MetricFamily, name, want string) (*dto.Metric, bool) {
	for _, m := range fams[name].GetMetric() {
		if labelString(m) == want {
			return m, true
		}
	}
	return nil, false
}

// value returns the value of a counter or gauge sample, failing the test when
// it is missing.
func value(tb testing.TB, fams map[string]*dto.MetricFamily, name, labels string) float64 {
	tb.Helper()
	m, ok := sample(fams, name, labels)
	if !ok {
		tb.Fatalf("%s{%s} not exported; have %v", name, labels, series(fams, name))
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	tb.Fatalf("%s{%s} is neither a counter nor a gauge", name, labels)
	return 0
}

// histogram returns a histogram sample, failing the test when it is missing.
func histogram(tb testing.TB, fams map[string]*dto.MetricFamily, name, labels string) *dto.Histogram {
	tb.Helper()
	m, ok := sample(fams, name, labels)
	if !ok || m.Histogram == nil {
		tb.Fatalf("histogram %s{%s} not exported; have %v", name, labels, series(fams, name))
	}
	return m.Histogram
}

// series lists the label sets of family name, for failure messages.
func series(fams map[string]*dto.MetricFamily, name string) []string {
	var out []string
	for _, m := range fams[name].GetMetric() {
		out = append(out, "{"+labelString(m)+"}")
	}
	return out
}
