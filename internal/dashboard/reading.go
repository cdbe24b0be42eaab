package dashboard

import (
	"slices"

	dto "github.com/prometheus/client_model/go"
)

// seriesKey names one series of MetricUpstreamRequests.
type seriesKey struct{ upstream, route, class string }

// routeKey names one route of one upstream.
type routeKey struct{ upstream, route string }

// reading holds the cumulative counters a window is taken of, as one
// gather found them. A nil map is a family that was absent (not
// registered, or without series).
type reading struct {
	reqs     map[seriesKey]float64 // MetricUpstreamRequests
	durs     map[routeKey]*buckets // MetricUpstreamDuration, series of a route merged
	failures map[string]float64    // MetricPinFailures by reason
}

// read takes a reading of the families, by name.
func read(byName map[string]*dto.MetricFamily) reading {
	var r reading
	if f := byName[MetricUpstreamRequests]; f != nil && len(f.GetMetric()) > 0 {
		r.reqs = map[seriesKey]float64{}
		for _, s := range f.GetMetric() {
			r.reqs[seriesKey{orNone(label(s, "upstream")), orNone(label(s, "route")), orNone(label(s, "class"))}] += value(s)
		}
	}
	if f := byName[MetricUpstreamDuration]; f != nil && len(f.GetMetric()) > 0 {
		r.durs = map[routeKey]*buckets{}
		for _, s := range f.GetMetric() {
			if s.GetHistogram() == nil {
				continue
			}
			k := routeKey{orNone(label(s, "upstream")), orNone(label(s, "route"))}
			if r.durs[k] == nil {
				r.durs[k] = &buckets{}
			}
			r.durs[k].add(s.GetHistogram())
		}
	}
	r.failures = sumByLabel(byName[MetricPinFailures], "reason")
	return r
}

// since returns what r counted after base: each series' difference. A
// family absent from r is absent from the result (no data); one absent
// from base, or a series base lacks, counts from zero, as a new series
// does. A series that went down was reset, and counts from zero again
// (as Prometheus' increase does).
func (r reading) since(base reading) reading {
	var out reading
	if r.reqs != nil {
		out.reqs = make(map[seriesKey]float64, len(r.reqs))
		for k, v := range r.reqs {
			out.reqs[k] = increase(v, base.reqs[k])
		}
	}
	if r.failures != nil {
		out.failures = make(map[string]float64, len(r.failures))
		for k, v := range r.failures {
			out.failures[k] = increase(v, base.failures[k])
		}
	}
	if r.durs != nil {
		out.durs = make(map[routeKey]*buckets, len(r.durs))
		for k, b := range r.durs {
			out.durs[k] = b.since(base.durs[k])
		}
	}
	return out
}

// increase is what a counter at now counted since it was at base.
func increase(now, base float64) float64 {
	if now < base {
		return now
	}
	return now - base
}

// since returns the observations of b made after base, on b's bounds; b
// itself when base is nil or b was reset since (a count or a bucket went
// down).
func (b *buckets) since(base *buckets) *buckets {
	if base == nil || base.count > b.count {
		return b.clone()
	}
	out := &buckets{bounds: slices.Clone(b.bounds), counts: make([]float64, len(b.counts)), count: b.count - base.count}
	for i, ub := range b.bounds {
		c := b.counts[i] - base.at(ub)
		if c < 0 {
			return b.clone()
		}
		out.counts[i] = c
	}
	return out
}

func (b *buckets) clone() *buckets {
	return &buckets{bounds: slices.Clone(b.bounds), counts: slices.Clone(b.counts), count: b.count}
}
