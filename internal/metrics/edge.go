package metrics

import "github.com/prometheus/client_golang/prometheus"

// HTTPRefusals are the values of pinbot_http_refusals_total's reason
// label: the limit a request to the HTTP listener was refused by, with
// 429 (package internal/edge): http_rate, a client's rate on the public
// routes (PINBOT_HTTP_RATE), or operator_rate, its rate on the
// operator's routes (PINBOT_OPERATOR_RATE).
var HTTPRefusals = []string{"http_rate", "operator_rate"}

func (m *Metrics) initEdge() {
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_http_refusals_total",
		Help: "Requests to the HTTP listener refused with 429, by the limit that refused them: http_rate (a client's rate on the public routes) or operator_rate (on the operator's routes).",
	}, []string{"reason"})
	m.reg.MustRegister(refusals)
	m.httpRefusals = children(refusals, HTTPRefusals)
}

// HTTPRefused counts a request to the HTTP listener refused with 429, by
// reason (one of HTTPRefusals; anything else counts as other): it is the
// edge.Config.Refused to set. It is safe for simultaneous use and does
// not block.
func (m *Metrics) HTTPRefused(reason string) {
	c, ok := m.httpRefusals[reason]
	if !ok {
		c = m.httpRefusals[other]
	}
	c.Inc()
}
