// Package metricstest reads what a metrics endpoint serves, for tests:
// Scrape GETs it and parses Prometheus' text format, and Samples looks
// values up by name and labels.
package metricstest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Samples are the metric families of one scrape.
type Samples map[string]*dto.MetricFamily

// Scrape GETs url (a /metrics endpoint) and parses its answer, failing
// the test unless it is a 200 in the text format.
func Scrape(t testing.TB, url string) Samples {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer resp.Body.Close()
	return parse(t, url, resp.StatusCode, resp.Body)
}

// ScrapeHandler is Scrape of h, served in-process.
func ScrapeHandler(t testing.TB, h http.Handler) Samples {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return parse(t, "the handler", rec.Code, rec.Body)
}

func parse(t testing.TB, what string, status int, body io.Reader) Samples {
	t.Helper()
	if status != http.StatusOK {
		b, _ := io.ReadAll(body)
		t.Fatalf("scraping %s: status %d: %s", what, status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(body)
	if err != nil {
		t.Fatalf("scraping %s: %v", what, err)
	}
	return Samples(fams)
}

// Get returns the sum of the values of name's series whose labels
// include every pair of labels ("result", "pinned", ...): a counter's or
// a gauge's value, a histogram's count of observations. It is 0 when no
// series matches.
func (s Samples) Get(name string, labels ...string) float64 {
	v, _ := s.Lookup(name, labels...)
	return v
}

// Lookup is Get, also reporting whether any series matched.
func (s Samples) Lookup(name string, labels ...string) (float64, bool) {
	if len(labels)%2 != 0 {
		panic("metricstest: labels must come in name, value pairs")
	}
	fam, ok := s[name]
	if !ok {
		return 0, false
	}
	sum, found := 0.0, false
	for _, m := range fam.GetMetric() {
		if !matches(m, labels) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum, found
}

// HistogramSum returns the sum of the observations of name's histogram
// series whose labels include every pair of labels.
func (s Samples) HistogramSum(name string, labels ...string) float64 {
	sum := 0.0
	if fam, ok := s[name]; ok {
		for _, m := range fam.GetMetric() {
			if m.Histogram != nil && matches(m, labels) {
				sum += m.Histogram.GetSampleSum()
			}
		}
	}
	return sum
}

// Series returns the label sets of name's series, each as name=value
// pairs in the order served.
func (s Samples) Series(name string) []map[string]string {
	var out []map[string]string
	if fam, ok := s[name]; ok {
		for _, m := range fam.GetMetric() {
			ls := make(map[string]string, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			out = append(out, ls)
		}
	}
	return out
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
