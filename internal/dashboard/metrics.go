package dashboard

import (
	"cmp"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// The metric families the dashboard reads, by name. Each may be absent
// (not registered, or no series yet): its part of the page then says "no
// data".
const (
	MetricPins             = "pinbot_pins_total"                        // counter {source, result}, read by result
	MetricPinFailures      = "pinbot_pin_failures_total"                // counter {reason}
	MetricUpstreamRequests = "pinbot_upstream_requests_total"           // counter {upstream, route, class}
	MetricUpstreamDuration = "pinbot_upstream_request_duration_seconds" // histogram {upstream, route}
	MetricGatewayShards    = "pinbot_gateway_shards_connected"          // gauge
	// The refusals at pinbot's edges, read together by reason.
	MetricInteractionRefusals = "pinbot_interaction_refusals_total" // counter {reason}
	MetricHTTPRefusals        = "pinbot_http_refusals_total"        // counter {reason}
)

// ClassTooMany is the class of the requests answered 429 Too Many
// Requests.
const ClassTooMany = "429"

// successClasses are the values of the class label that are not errors;
// any other class (4xx, 5xx, 429, timeout...) counts as one.
var successClasses = []string{"2xx", "ok", "success"}

// Count is a label value and its count.
type Count struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Counts are what one labelled counter holds, largest first; nil when the
// family is absent.
type Counts struct {
	Present bool    `json:"present"`
	Total   float64 `json:"total"`
	Items   []Count `json:"items"`
}

// Max returns the largest count, for scaling bars.
func (c Counts) Max() float64 {
	if len(c.Items) == 0 {
		return 0
	}
	return c.Items[0].Value
}

// Route is what the upstream metrics say of one route of one upstream
// (or, as Upstream.All, of all its routes).
type Route struct {
	// Upstream is set on Upstream.All only.
	Upstream string  `json:"upstream,omitempty"`
	Route    string  `json:"route"`
	Requests float64 `json:"requests"`
	// Errors are the requests whose class is not a success (see
	// successClasses), and Classes every class, largest first.
	Errors float64 `json:"errors"`
	// TooMany are the requests answered 429 (class ClassTooMany).
	TooMany float64 `json:"too_many"`
	Classes []Count `json:"classes"`
	// Latency holds p50 and p99 estimates from the histogram's buckets,
	// when the histogram has observations.
	Latency *Latency `json:"latency,omitempty"`
}

// ErrorRate is Errors/Requests, 0 without requests.
func (r Route) ErrorRate() float64 {
	if r.Requests == 0 {
		return 0
	}
	return r.Errors / r.Requests
}

// Latency is a pair of quantile estimates, in seconds, interpolated
// within histogram buckets as Prometheus's histogram_quantile does. Over
// is set for a quantile that falls beyond the last finite bucket: the
// value is then that bucket's bound, a floor.
type Latency struct {
	P50, P99         float64
	P50Over, P99Over bool
	Count            float64
}

// Upstream is one upstream service's routes, most requested first.
type Upstream struct {
	Name   string  `json:"name"`
	All    Route   `json:"all"`
	Routes []Route `json:"routes"`
}

// Metrics is what the dashboard read from the gatherer.
type Metrics struct {
	Pins     Counts `json:"pins"`
	Failures Counts `json:"failures"`
	// UpstreamsPresent says whether either upstream family was there.
	UpstreamsPresent bool       `json:"upstreams_present"`
	Upstreams        []Upstream `json:"upstreams"`
	// Shards is the number of gateway shards connected; nil when absent.
	Shards *float64 `json:"shards"`
	// Refusals are the interactions and the HTTP requests refused at
	// pinbot's edges, by reason (MetricInteractionRefusals and
	// MetricHTTPRefusals: their reasons are distinct); present when
	// either family is.
	Refusals Counts `json:"refusals"`
	// Windows are the upstreams and the failures over each of Windows,
	// shortest first; nil without a gatherer.
	Windows []Window `json:"windows,omitempty"`
}

// readMetrics picks the dashboard's families out of fams by name.
func readMetrics(fams []*dto.MetricFamily) Metrics {
	m, _ := readTotals(fams)
	return m
}

// readTotals picks the dashboard's families out of fams by name: the
// totals since the process started, and the reading of the counters
// that windows are taken of.
func readTotals(fams []*dto.MetricFamily) (Metrics, reading) {
	byName := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	var m Metrics
	r := read(byName)
	m.Pins = labelCounts(byName[MetricPins], "result")
	m.Failures = countsOf(r.failures)
	m.Refusals = refusals(byName)
	m.Upstreams, m.UpstreamsPresent = upstreams(r)
	if f := byName[MetricGatewayShards]; f != nil && len(f.GetMetric()) > 0 {
		var n float64
		for _, s := range f.GetMetric() {
			n += value(s)
		}
		m.Shards = &n
	}
	return m, r
}

// refusals sums the refusal families by reason; not present when both
// are absent.
func refusals(byName map[string]*dto.MetricFamily) Counts {
	var sums map[string]float64
	for _, name := range []string{MetricInteractionRefusals, MetricHTTPRefusals} {
		for reason, v := range sumByLabel(byName[name], "reason") {
			if sums == nil {
				sums = map[string]float64{}
			}
			sums[reason] += v
		}
	}
	return countsOf(sums)
}

// value is a counter's, gauge's or untyped metric's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// label returns the value of m's label name, "" when it has none.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// labelCounts sums f's series by the value of one label.
func labelCounts(f *dto.MetricFamily, name string) Counts {
	return countsOf(sumByLabel(f, name))
}

// sumByLabel sums f's series by the value of one label; nil when f is
// absent or has no series.
func sumByLabel(f *dto.MetricFamily, name string) map[string]float64 {
	if f == nil || len(f.GetMetric()) == 0 {
		return nil
	}
	sums := map[string]float64{}
	for _, s := range f.GetMetric() {
		sums[orNone(label(s, name))] += value(s)
	}
	return sums
}

// countsOf returns sums as Counts, largest first; not present when sums
// is nil.
func countsOf(sums map[string]float64) Counts {
	if sums == nil {
		return Counts{}
	}
	c := Counts{Present: true, Items: sortedCounts(sums)}
	for _, v := range sums {
		c.Total += v
	}
	return c
}

// Of returns the count of name, 0 when c has none.
func (c Counts) Of(name string) float64 {
	for _, it := range c.Items {
		if it.Name == name {
			return it.Value
		}
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// sortedCounts returns sums largest first, ties by name.
func sortedCounts(sums map[string]float64) []Count {
	out := make([]Count, 0, len(sums))
	for k, v := range sums {
		out = append(out, Count{k, v})
	}
	slices.SortFunc(out, func(a, b Count) int {
		return cmp.Or(cmp.Compare(b.Value, a.Value), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// routeAcc gathers one route's series.
type routeAcc struct {
	requests, errors float64
	classes          map[string]float64
	hist             *buckets
}

// buckets is a cumulative histogram: counts[i] observations at most
// bounds[i], count in all.
type buckets struct {
	bounds []float64
	counts []float64
	count  float64
}

// add adds h's buckets to b; bounds b lacks are taken in, each series
// counting at a new bound what it counts at its own largest bound below.
func (b *buckets) add(h *dto.Histogram) {
	bounds := slices.Clone(b.bounds)
	for _, bk := range h.GetBucket() {
		if !math.IsInf(bk.GetUpperBound(), +1) {
			bounds = append(bounds, bk.GetUpperBound())
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	counts := make([]float64, len(bounds))
	for i, ub := range bounds {
		counts[i] = b.at(ub) + cumulativeAt(h, ub)
	}
	b.bounds, b.counts = bounds, counts
	b.count += histCount(h)
}

// at returns b's cumulative count at ub.
func (b *buckets) at(ub float64) float64 {
	i, found := slices.BinarySearch(b.bounds, ub) // the first bound >= ub
	if found {
		return b.counts[i]
	}
	if i == 0 {
		return 0
	}
	return b.counts[i-1]
}

func histCount(h *dto.Histogram) float64 {
	if h.SampleCountFloat != nil {
		return h.GetSampleCountFloat()
	}
	return float64(h.GetSampleCount())
}

// cumulativeAt returns h's cumulative count at its largest bound <= ub.
func cumulativeAt(h *dto.Histogram, ub float64) float64 {
	var c float64
	for _, bk := range h.GetBucket() {
		if bk.GetUpperBound() > ub {
			break
		}
		if bk.CumulativeCountFloat != nil {
			c = bk.GetCumulativeCountFloat()
		} else {
			c = float64(bk.GetCumulativeCount())
		}
	}
	return c
}

// quantile estimates the q-quantile of b as histogram_quantile does:
// linear interpolation within the bucket holding the rank, from 0 for
// the first one. A rank beyond the last finite bucket gives that bound,
// with over set.
func (b *buckets) quantile(q float64) (v float64, over bool) {
	if b == nil || b.count == 0 || len(b.bounds) == 0 {
		return 0, false
	}
	rank := q * b.count
	lower, below := 0.0, 0.0
	for i, ub := range b.bounds {
		if b.counts[i] >= rank {
			in := b.counts[i] - below
			if in <= 0 {
				return ub, false
			}
			if i == 0 && ub <= 0 {
				return ub, false
			}
			return lower + (ub-lower)*(rank-below)/in, false
		}
		lower, below = ub, b.counts[i]
	}
	return b.bounds[len(b.bounds)-1], true
}

// latency returns the p50 and p99 of b, nil without observations.
func (b *buckets) latency() *Latency {
	if b == nil || b.count == 0 || len(b.bounds) == 0 {
		return nil
	}
	l := &Latency{Count: b.count}
	l.P50, l.P50Over = b.quantile(0.5)
	l.P99, l.P99Over = b.quantile(0.99)
	return l
}

// upstreams assembles a reading's upstream requests and durations by
// upstream and route: Pinterest first, Discord next, others by name.
// present is false when neither family was read.
func upstreams(r reading) (_ []Upstream, present bool) {
	if r.reqs == nil && r.durs == nil {
		return nil, false
	}
	acc := map[string]map[string]*routeAcc{} // upstream, route
	get := func(up, route string) *routeAcc {
		if acc[up] == nil {
			acc[up] = map[string]*routeAcc{}
		}
		ra := acc[up][route]
		if ra == nil {
			ra = &routeAcc{classes: map[string]float64{}}
			acc[up][route] = ra
		}
		return ra
	}
	for k, v := range r.reqs {
		ra := get(k.upstream, k.route)
		ra.requests += v
		ra.classes[k.class] += v
		if !slices.Contains(successClasses, strings.ToLower(k.class)) {
			ra.errors += v
		}
	}
	for k, b := range r.durs {
		get(k.upstream, k.route).hist = b
	}
	var out []Upstream
	for name, routes := range acc {
		u := Upstream{Name: name, All: Route{Upstream: name, Route: "all routes"}}
		all := &buckets{}
		classes := map[string]float64{}
		for route, ra := range routes {
			rt := Route{Route: route, Requests: ra.requests, Errors: ra.errors, TooMany: ra.classes[ClassTooMany],
				Classes: sortedCounts(ra.classes), Latency: ra.hist.latency()}
			u.Routes = append(u.Routes, rt)
			u.All.Requests += ra.requests
			u.All.Errors += ra.errors
			u.All.TooMany += rt.TooMany
			for c, v := range ra.classes {
				classes[c] += v
			}
			if ra.hist != nil {
				all.merge(ra.hist)
			}
		}
		u.All.Classes = sortedCounts(classes)
		u.All.Latency = all.latency()
		slices.SortFunc(u.Routes, func(a, b Route) int {
			return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Route, b.Route))
		})
		out = append(out, u)
	}
	rank := func(name string) int {
		switch strings.ToLower(name) {
		case "pinterest":
			return 0
		case "discord":
			return 1
		}
		return 2
	}
	slices.SortFunc(out, func(a, b Upstream) int {
		return cmp.Or(cmp.Compare(rank(a.Name), rank(b.Name)), cmp.Compare(a.Name, b.Name))
	})
	return out, true
}

// merge adds o to b, as add does for a histogram.
func (b *buckets) merge(o *buckets) {
	bounds := slices.Concat(b.bounds, o.bounds)
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	counts := make([]float64, len(bounds))
	for i, ub := range bounds {
		counts[i] = b.at(ub) + o.at(ub)
	}
	b.bounds, b.counts = bounds, counts
	b.count += o.count
}
