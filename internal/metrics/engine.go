package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pinbot/pinbot/actors"
)

// engineObserver is the actors.Observer of the engine's metrics. Every
// counter is resolved once, so a report is one atomic add.
type engineObserver struct {
	grants, commits, releases, expiries prometheus.Counter
	refusals                            [actors.RefusedQueue + 1]prometheus.Counter
	journalFailures                     prometheus.Counter
	batchWrites, commitSeconds          prometheus.Histogram
	loadSeconds, snapshotSeconds        prometheus.Histogram
}

var _ actors.Observer = (*engineObserver)(nil)

// Buckets of the engine's latency histograms: a sync of the disk takes
// about 0.2 ms on the reference machine, a stall tens of milliseconds.
var diskBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

func (o *engineObserver) init(reg *prometheus.Registry) {
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
		reg.MustRegister(h)
		return h
	}
	o.grants = counter("pinbot_engine_grants_total", "Slots granted and acknowledged (durable), queued pins' included.")
	o.commits = counter("pinbot_engine_commits_total", "Reservations committed as pins.")
	o.releases = counter("pinbot_engine_releases_total", "Reservations released (the pin surely did not happen).")
	o.expiries = counter("pinbot_engine_lease_expiries_total", "Reservations whose lease ran out unresolved: each counts as a pin made at its deadline.")
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_engine_refusals_total",
		Help: "Reserve calls that granted nothing, by reason: limit (the window is full), held (Pinterest asked to wait), queue (queued pins wait for the free slots).",
	}, []string{"reason"})
	reg.MustRegister(refusals)
	for _, r := range []actors.Refusal{actors.RefusedLimit, actors.RefusedHeld, actors.RefusedQueue} {
		o.refusals[r] = refusals.WithLabelValues(r.String())
	}
	o.journalFailures = counter("pinbot_journal_write_failures_total", "Journal batches the store failed to write (their grants were refused).")
	o.batchWrites = histogram("pinbot_journal_batch_writes", "Account writes per journal batch (one store transaction, one sync).",
		prometheus.ExponentialBuckets(1, 2, 13))
	o.commitSeconds = histogram("pinbot_journal_commit_seconds", "Time of one journal batch's Store.Write, its sync included.", diskBuckets)
	o.snapshotSeconds = histogram("pinbot_engine_snapshot_seconds", "Time a passivating account took to write its final snapshot until durable.", diskBuckets)
	o.loadSeconds = histogram("pinbot_engine_replay_seconds", "Time an account took to load: its snapshot, jobs and journal events read and replayed.", diskBuckets)
}

func (o *engineObserver) Granted(slots int)      { o.grants.Add(float64(slots)) }
func (o *engineObserver) Committed()             { o.commits.Inc() }
func (o *engineObserver) Released()              { o.releases.Inc() }
func (o *engineObserver) LeaseExpired(slots int) { o.expiries.Add(float64(slots)) }

func (o *engineObserver) Refused(why actors.Refusal) {
	if int(why) < len(o.refusals) && o.refusals[why] != nil {
		o.refusals[why].Inc()
	}
}

func (o *engineObserver) Loaded(took time.Duration)      { o.loadSeconds.Observe(took.Seconds()) }
func (o *engineObserver) Snapshotted(took time.Duration) { o.snapshotSeconds.Observe(took.Seconds()) }

func (o *engineObserver) JournalBatch(writes int, took time.Duration, err error) {
	o.batchWrites.Observe(float64(writes))
	o.commitSeconds.Observe(took.Seconds())
	if err != nil {
		o.journalFailures.Inc()
	}
}
