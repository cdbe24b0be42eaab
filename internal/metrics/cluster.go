package metrics

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/clusterrpc"
	"github.com/pinbot/pinbot/internal/partition"
	"github.com/pinbot/pinbot/persistence"
)

// The values of the cluster metrics' labels. A value outside its list
// counts as "other".
var (
	// PeerOutcomes are the values of the outcome label of
	// pinbot_cluster_peer_calls_total and pinbot_cluster_peer_served_total,
	// as package clusterrpc reports them: ok, error (the handler ran and
	// failed), refused (the handler refused before any work, or the
	// method is unknown there), not_sent (the call never left), unknown
	// (the handler may have run).
	PeerOutcomes = []string{
		clusterrpc.OutcomeOK, clusterrpc.OutcomeError, clusterrpc.OutcomeRefused,
		clusterrpc.OutcomeNotSent, clusterrpc.OutcomeUnknown,
	}
	// PeerRefusals are the values of pinbot_cluster_peer_refusals_total's
	// reason label: why this member's peers' server refused a request
	// before any handler (package clusterrpc's Reason constants).
	PeerRefusals = []string{
		clusterrpc.ReasonMalformed, clusterrpc.ReasonTooLarge, clusterrpc.ReasonIncomplete,
		clusterrpc.ReasonBadMAC, clusterrpc.ReasonWrongIncarnation, clusterrpc.ReasonStale,
		clusterrpc.ReasonReplay, clusterrpc.ReasonUnknownMethod,
	}
	// ForwardOutcomes are the values of pinbot_cluster_forwards_total's
	// outcome label: ok (the owner answered), refused (no work was done:
	// no owner yet, the owner could not be reached or refused), unknown
	// (the owner may have done the work), error (the owner ran it and
	// failed).
	ForwardOutcomes = []string{"ok", "refused", "unknown", "error"}
	// EtcdMethods are the values of the method label of the etcd request
	// metrics: the unary calls of etcd's API the cluster makes, by their
	// gRPC method's name.
	EtcdMethods = []string{
		"Range", "Put", "DeleteRange", "Txn", "Compact",
		"LeaseGrant", "LeaseRevoke", "LeaseTimeToLive", "LeaseLeases",
		"MemberList", "Status",
	}
)

// PeerPing is the method label of package clusterrpc's pings (clock
// offsets, a peer's incarnation).
const PeerPing = "ping"

// rpcPing is the method clusterrpc reports its pings under.
const rpcPing = "_ping"

// MemberSummary is what the cluster membership's gauges show, read at
// each scrape (cluster.Member.Status): partitions held, live members
// seen, and the time left until the member's serving deadline.
type MemberSummary struct {
	Held, Members int
	Remaining     time.Duration
	// Shards counts the gateway shards held.
	Shards int
}

// Buckets of the cluster's latency histograms: a call between members
// on one network takes a millisecond or less, a forwarded /pin batch as
// long as its pins take on Pinterest.
var (
	peerBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	etcdBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
)

// ClusterMetrics are the metrics of a cluster member (see
// Metrics.Cluster): its membership (it is the cluster.Observer to set as
// cluster.Config.Observer), its calls to and from its peers (Peers),
// the work it forwards (Forwarded), its etcd requests (EtcdRequest) and
// the writes etcd refused as fenced off (Engine). It is safe for
// simultaneous use.
type ClusterMetrics struct {
	acquired, lost, handedOver prometheus.Counter
	lapses, leaseExpiries      prometheus.Counter
	fenced                     prometheus.Counter
	// The gateway shards' (cluster.ShardObserver).
	shardsAcquired, shardsLost, shardsHandedOver prometheus.Counter

	// methods are the values of the peer calls' method label.
	methods     []string
	calls       *prometheus.CounterVec
	callSeconds *prometheus.HistogramVec
	served      *prometheus.CounterVec
	refusals    map[string]prometheus.Counter
	forwards    *prometheus.CounterVec
	etcdSeconds *prometheus.HistogramVec
	etcdErrors  map[string]prometheus.Counter

	engine fencingObserver

	// The sources of the gauges read at each scrape; nil reads as none.
	member atomic.Pointer[func() MemberSummary]
	clocks atomic.Pointer[func() map[string]clusterrpc.Offset]
	// suspended says whether the member gave up its partitions.
	suspended atomic.Pointer[func() bool]
}

// Cluster registers the metrics of a cluster member and returns them;
// call it once per Metrics (a second call panics: the series exist).
// peerMethods are the methods the members call each other with (the
// peers' server's handlers); with PeerPing they are the values of the
// peer calls' method label, any other counting as "other". A program
// outside a cluster does not call it, and serves none of these series.
func (m *Metrics) Cluster(peerMethods []string) *ClusterMetrics {
	c := &ClusterMetrics{methods: append(slices.Clone(peerMethods), PeerPing)}
	counter := func(name, help string) prometheus.Counter {
		ctr := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		m.reg.MustRegister(ctr)
		return ctr
	}
	c.acquired = counter("pinbot_cluster_partitions_acquired_total", "Partitions this member began serving.")
	c.lost = counter("pinbot_cluster_partitions_lost_total", "Partitions this member stopped serving without a handover (its serving deadline or its lease gone, or a handover that failed); their actors stopped without writing.")
	c.handedOver = counter("pinbot_cluster_partitions_handed_over_total", "Partitions this member handed over gracefully: writes flushed, actors passivated, owner key deleted.")
	c.lapses = counter("pinbot_cluster_deadline_lapses_total", "Times this member's serving deadline passed without a newer acknowledged lease keep-alive: every partition it held was lost.")
	c.leaseExpiries = counter("pinbot_cluster_lease_expiries_total", "Times etcd no longer knew this member's lease: it registered again under a new one.")
	c.shardsAcquired = counter("pinbot_cluster_shards_acquired_total", "Gateway shards this member began holding (their connection opened or resumed).")
	c.shardsLost = counter("pinbot_cluster_shards_lost_total", "Gateway shards this member stopped holding without a handover (its serving deadline or its lease gone); their connection closed at once.")
	c.shardsHandedOver = counter("pinbot_cluster_shards_handed_over_total", "Gateway shards this member handed over gracefully: closed resumably, session stored, owner key deleted.")
	c.fenced = counter("pinbot_cluster_fenced_writes_total", "Account writes etcd refused because a newer owner holds their partition (the write's fence is stale); nothing of them was applied.")

	c.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_cluster_peer_calls_total",
		Help: "Calls this member made to its peers, by method and outcome: ok, error (the handler failed), refused (not run), not_sent, unknown (may have run).",
	}, []string{"method", "outcome"})
	c.callSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pinbot_cluster_peer_call_seconds",
		Help:    "Time of the calls this member made to its peers, until their answer or failure, by method.",
		Buckets: peerBuckets,
	}, []string{"method"})
	c.served = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_cluster_peer_served_total",
		Help: "Peers' calls this member's handlers answered (pings included), by method and outcome: ok, error, refused (before any work).",
	}, []string{"method", "outcome"})
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_cluster_peer_refusals_total",
		Help: "Requests this member's peers' server refused before any handler, by reason (malformed, too_large, incomplete, bad_mac, wrong_incarnation, stale, replay, unknown_method).",
	}, []string{"reason"})
	c.forwards = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_cluster_forwards_total",
		Help: "Attempts to hand an account's work (a /pin batch, an engine call) to the member owning it, by method and outcome: ok, refused (no work done: no owner, or the owner unreachable or refusing; the bot tries again), unknown (the work may have been done), error (the owner ran it and failed).",
	}, []string{"method", "outcome"})
	c.etcdSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pinbot_cluster_etcd_request_seconds",
		Help:    "Time of each attempt of this member's unary requests to etcd, by gRPC method.",
		Buckets: etcdBuckets,
	}, []string{"method"})
	etcdErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_cluster_etcd_request_failures_total",
		Help: "Attempts of this member's unary requests to etcd that failed, by gRPC method.",
	}, []string{"method"})
	m.reg.MustRegister(c.calls, c.callSeconds, c.served, refusals, c.forwards, c.etcdSeconds, etcdErrors)
	c.refusals = children(refusals, PeerRefusals)
	c.etcdErrors = children(etcdErrors, EtcdMethods)
	// Every series of a known label value is served from the start.
	for _, method := range append(slices.Clone(c.methods), other) {
		c.callSeconds.WithLabelValues(method)
		for _, o := range PeerOutcomes {
			c.calls.WithLabelValues(method, o)
			c.served.WithLabelValues(method, o)
		}
		for _, o := range ForwardOutcomes {
			if method != PeerPing {
				c.forwards.WithLabelValues(method, o)
			}
		}
	}
	for _, method := range EtcdMethods {
		c.etcdSeconds.WithLabelValues(method)
	}

	gauge := func(name, help string, read func(MemberSummary) float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if f := c.member.Load(); f != nil {
				return read((*f)())
			}
			return 0
		}))
	}
	gauge("pinbot_cluster_partitions_held", "Partitions this member holds (serving, acquiring or handing over).",
		func(s MemberSummary) float64 { return float64(s.Held) })
	gauge("pinbot_cluster_shards_held", "Gateway shards this member holds (open, opening or handing over).",
		func(s MemberSummary) float64 { return float64(s.Shards) })
	gauge("pinbot_cluster_members", "Live members of the cluster this member sees, itself included.",
		func(s MemberSummary) float64 { return float64(s.Members) })
	gauge("pinbot_cluster_lease_remaining_seconds", "Time left until this member's serving deadline (its lease's last acknowledged keep-alive, less the margin); 0 when past.",
		func(s MemberSummary) float64 { return s.Remaining.Seconds() })
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "pinbot_cluster_suspended",
		Help: "1 while this member has given up its partitions and acquires none (its clock out of bound with its peers), else 0.",
	}, func() float64 {
		if f := c.suspended.Load(); f != nil && (*f)() {
			return 1
		}
		return 0
	}))
	m.reg.MustRegister(&clockCollector{
		offset: prometheus.NewDesc("pinbot_cluster_peer_clock_offset_seconds",
			"A peer's clock minus this member's, by the latest recent measure, by peer member id.", []string{"peer"}, nil),
		bound: prometheus.NewDesc("pinbot_cluster_peer_clock_offset_error_seconds",
			"How far the true offset of a peer's clock may be from the measured one (half the measure's round trip), by peer member id.", []string{"peer"}, nil),
		src: &c.clocks,
	})

	c.engine = fencingObserver{engineObserver: &m.engine, fenced: c.fenced}
	return c
}

// WatchMember has the membership's gauges call summary at each scrape
// (cluster.Member.Status, converted). It must not block.
func (c *ClusterMetrics) WatchMember(summary func() MemberSummary) { c.member.Store(&summary) }

// WatchClocks has the peers' clock gauges call offsets at each scrape:
// the measures of the live peers' clocks that count (recent ones), by
// member id. It must not block.
func (c *ClusterMetrics) WatchClocks(offsets func() map[string]clusterrpc.Offset) {
	c.clocks.Store(&offsets)
}

// WatchSuspended has the suspended gauge call suspended at each scrape:
// whether the member has given up its partitions. It must not block.
func (c *ClusterMetrics) WatchSuspended(suspended func() bool) { c.suspended.Store(&suspended) }

// Acquired counts a partition the member began serving.
func (c *ClusterMetrics) Acquired(partition.ID) { c.acquired.Inc() }

// Lost counts a partition the member stopped serving without a handover.
func (c *ClusterMetrics) Lost(partition.ID) { c.lost.Inc() }

// HandedOver counts a partition handed over gracefully.
func (c *ClusterMetrics) HandedOver(partition.ID) { c.handedOver.Inc() }

// ShardAcquired counts a gateway shard the member began holding.
func (c *ClusterMetrics) ShardAcquired(int) { c.shardsAcquired.Inc() }

// ShardLost counts a gateway shard lost without a handover.
func (c *ClusterMetrics) ShardLost(int) { c.shardsLost.Inc() }

// ShardHandedOver counts a gateway shard handed over gracefully.
func (c *ClusterMetrics) ShardHandedOver(int) { c.shardsHandedOver.Inc() }

// Lapsed counts a serving deadline that passed.
func (c *ClusterMetrics) Lapsed() { c.lapses.Inc() }

// LeaseExpired counts a lease etcd no longer knew.
func (c *ClusterMetrics) LeaseExpired() { c.leaseExpiries.Inc() }

// Forwarded counts one attempt to hand method's work to an account's
// owner, by outcome (one of ForwardOutcomes).
func (c *ClusterMetrics) Forwarded(method, outcome string) {
	if !slices.Contains(ForwardOutcomes, outcome) {
		outcome = other
	}
	c.forwards.WithLabelValues(c.method(method), outcome).Inc()
}

// EtcdRequest observes one attempt of a unary etcd request: method is
// its full gRPC method ("/etcdserverpb.KV/Range"), took how long it took
// and err its error.
func (c *ClusterMetrics) EtcdRequest(method string, took time.Duration, err error) {
	name := method[strings.LastIndexByte(method, '/')+1:]
	if !slices.Contains(EtcdMethods, name) {
		name = other
	}
	c.etcdSeconds.WithLabelValues(name).Observe(took.Seconds())
	if err != nil {
		c.etcdErrors[name].Inc()
	}
}

// Engine returns the observer to set as the member engine's
// actors.Config.Observer in place of Metrics.Engine: it reports to the
// same series, and counts the account writes of journal batches that
// etcd refused as fenced off.
func (c *ClusterMetrics) Engine() actors.Observer { return c.engine }

// Peers returns the observer of the peers' server and client
// (clusterrpc.WithObserver).
func (c *ClusterMetrics) Peers() clusterrpc.Observer { return peerObserver{c} }

// method is the label value of a peer method.
func (c *ClusterMetrics) method(method string) string {
	if method == rpcPing {
		return PeerPing
	}
	if !slices.Contains(c.methods, method) {
		return other
	}
	return method
}

// peerObserver is the clusterrpc.Observer of the peer metrics. The
// clock offsets are read at each scrape (WatchClocks), not from
// Measured, so that a peer gone takes its series with it.
type peerObserver struct{ c *ClusterMetrics }

var _ clusterrpc.Observer = peerObserver{}

func (o peerObserver) Called(method, outcome string, took time.Duration) {
	method = o.c.method(method)
	if !slices.Contains(PeerOutcomes, outcome) {
		outcome = other
	}
	o.c.calls.WithLabelValues(method, outcome).Inc()
	o.c.callSeconds.WithLabelValues(method).Observe(took.Seconds())
}

func (o peerObserver) Served(method, outcome string, _ time.Duration) {
	if !slices.Contains(PeerOutcomes, outcome) {
		outcome = other
	}
	o.c.served.WithLabelValues(o.c.method(method), outcome).Inc()
}

func (o peerObserver) Refused(reason string) { inc(o.c.refusals, reason) }

func (peerObserver) Measured(string, clusterrpc.Offset) {}

// fencingObserver is the engine's observer with the fenced writes
// counted: a batch refused whole counts all its writes, a partial
// failure those of its failed writes that were fenced off.
type fencingObserver struct {
	*engineObserver
	fenced prometheus.Counter
}

var _ actors.Observer = fencingObserver{}

func (o fencingObserver) JournalBatch(writes int, took time.Duration, err error) {
	o.engineObserver.JournalBatch(writes, took, err)
	if n := FencedWrites(err, writes); n > 0 {
		o.fenced.Add(float64(n))
	}
}

// FencedWrites returns how many of the writes account writes of a
// Store.Write that returned err were refused as fenced off
// (persistence.ErrFenced).
func FencedWrites(err error, writes int) int {
	if err == nil {
		return 0
	}
	var pe *persistence.PartialWriteError
	if errors.As(err, &pe) {
		n := 0
		for _, e := range pe.Failed {
			if errors.Is(e, persistence.ErrFenced) {
				n++
			}
		}
		return n
	}
	if errors.Is(err, persistence.ErrFenced) {
		return writes
	}
	return 0
}

// clockCollector serves the peers' clock offsets read at each scrape, one
// series per peer measured.
type clockCollector struct {
	offset, bound *prometheus.Desc
	src           *atomic.Pointer[func() map[string]clusterrpc.Offset]
}

func (c *clockCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.offset
	ch <- c.bound
}

func (c *clockCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.src.Load()
	if f == nil {
		return
	}
	for peer, o := range (*f)() {
		ch <- prometheus.MustNewConstMetric(c.offset, prometheus.GaugeValue, o.Offset.Seconds(), peer)
		ch <- prometheus.MustNewConstMetric(c.bound, prometheus.GaugeValue, (o.RTT / 2).Seconds(), peer)
	}
}
