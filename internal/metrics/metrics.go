package metrics

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pinbot/pinbot/actors"
)

// Path is where the HTTP listener serves the metrics.
const Path = "/metrics"

// Metrics owns pinbot's Prometheus registry and every collector in it.
// Build one per process with New; it is safe for simultaneous use by
// multiple goroutines.
type Metrics struct {
	reg *prometheus.Registry

	engine    engineObserver
	bot       BotObserver
	reconcile ReconcileObserver

	upstreamRequests *prometheus.CounterVec
	upstreamDuration *prometheus.HistogramVec
	retryAfter       *prometheus.HistogramVec

	// httpRefusals are pinbot_http_refusals_total's series by reason.
	httpRefusals map[string]prometheus.Counter

	// The sources of the gauges read at each scrape; nil reads as 0.
	resident, parked, queued, shards atomic.Pointer[func() int]
	breaker                          atomic.Pointer[func() string]
	drift                            atomic.Pointer[func() DriftSummary]
}

// New returns a Metrics with every collector registered: pinbot's own,
// the Go runtime's and the process's.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.engine.init(m.reg)
	m.bot.init(m.reg)
	m.initUpstream()
	m.initEdge()
	m.initReconcile()
	gauge := func(name, help string, src *atomic.Pointer[func() int]) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if f := src.Load(); f != nil {
				return float64((*f)())
			}
			return 0
		}))
	}
	gauge("pinbot_engine_resident_accounts", "Accounts in memory: with an actor, or parked.", &m.resident)
	gauge("pinbot_engine_parked_accounts", "Accounts in memory parked: their state held without an actor, in memory the collector does not walk.", &m.parked)
	gauge("pinbot_engine_queued_accounts", "Accounts with queued pins waiting for a slot.", &m.queued)
	gauge("pinbot_gateway_shards_connected", "Discord gateway shards connected (READY or RESUMED and not dropped since).", &m.shards)
	for _, st := range BreakerStates {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "pinbot_upstream_breaker_state",
			Help:        "1 for the state the circuit breaker in front of an upstream is in, 0 for the others.",
			ConstLabels: prometheus.Labels{"upstream": Pinterest, "state": st},
		}, func() float64 {
			if f := m.breaker.Load(); f != nil && (*f)() == st {
				return 1
			}
			return 0
		}))
	}
	return m
}

// BreakerStates are the values of pinbot_upstream_breaker_state's state
// label, as pinterest.Client.BreakerState names them.
var BreakerStates = []string{"closed", "open", "half-open"}

// WatchBreaker has pinbot_upstream_breaker_state{upstream="pinterest"}
// call state at each scrape (pinterest.Client.BreakerState). It must not
// block.
func (m *Metrics) WatchBreaker(state func() string) { m.breaker.Store(&state) }

// Registry returns the registry, for collectors of other packages.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus' exposition formats. A
// collector that fails is reported in the scrape's errors and the rest
// is served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          m.reg,
		EnableOpenMetrics: true,
	})
}

// Engine returns the observer to set as actors.Config.Observer.
func (m *Metrics) Engine() actors.Observer { return &m.engine }

// WatchEngine has the gauges of resident, parked and queued accounts
// read e at each scrape.
func (m *Metrics) WatchEngine(e *actors.Engine) {
	resident, parked, queued := e.Resident, e.Parked, e.QueuedAccounts
	m.resident.Store(&resident)
	m.parked.Store(&parked)
	m.queued.Store(&queued)
}

// WatchGateway has pinbot_gateway_shards_connected call connected at each
// scrape (bot.Bot.ShardsConnected). It must not block.
func (m *Metrics) WatchGateway(connected func() int) { m.shards.Store(&connected) }
