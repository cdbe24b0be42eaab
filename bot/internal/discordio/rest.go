package discordio

import (
	"net"
	"net/http"
	"time"

	"github.com/disgoorg/disgo/rest"
	"github.com/rs/zerolog"
)

// RESTClientOpts are the options of the bot's disgo REST client: the HTTP
// client of newHTTPClient and the rate limiter of restLimiter, which logs
// to log. Each wrap, in order, wraps the HTTP client's transport (metrics).
func RESTClientOpts(log zerolog.Logger, wrap ...func(http.RoundTripper) http.RoundTripper) []rest.ClientConfigOpt {
	return restClientOpts(newRESTLimiter(log), wrap...)
}

// restClientOpts is RESTClientOpts with the rate limiter l.
func restClientOpts(l *restLimiter, wrap ...func(http.RoundTripper) http.RoundTripper) []rest.ClientConfigOpt {
	hc := newHTTPClient()
	for _, w := range wrap {
		hc.Transport = w(hc.Transport)
	}
	return []rest.ClientConfigOpt{
		rest.WithHTTPClient(hc),
		rest.WithRateLimiter(l),
	}
}

// restConns bounds the connections to Discord's REST API. Without a bound,
// a burst of a thousand interactions opens about a thousand connections at
// once (over HTTP/1.1; HTTP/2 multiplexes, and opens more connections only
// when a connection's streams run out), and most are closed again after it
// when they exceed the idle limit, so the next burst opens them again.
// Requests beyond the bound wait for a connection in the transport; the
// same number stays open between bursts.
const restConns = 64

// newHTTPClient returns the HTTP client for Discord's REST API: many
// interactions are answered at once over at most restConns connections,
// kept open between bursts.
func newHTTPClient() *http.Client {
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          restConns,
		MaxIdleConnsPerHost:   restConns,
		MaxConnsPerHost:       restConns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}
