// Package edge limits how fast each client may call pinbot's HTTP
// listener (the OAuth callback and the health check), as middleware
// around the whole handler.
//
// Each client address gets a GCRA rate (package internal/limit/gcra, on
// an injected monotonic clock, so that a step of the wall clock neither
// locks clients out nor lets them through early): Config.Rate, by
// default 20 requests a minute, 20 at once. The client's address is the connection's remote address; the
// X-Forwarded-For header is believed only from Config.TrustedProxies,
// read from the right, as far as the addresses are trusted proxies.
// IPv6 clients count per /64, the block one subscriber usually holds.
//
// Every answer carries the IETF draft's RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset (whole seconds until the
// client's full burst is back, rounded up), and the same values as
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset for
// older clients. A refused request gets 429 Too Many Requests with
// Retry-After (whole seconds, rounded up) and never reaches the handler;
// Config.Refused is told why (RefusedRate or RefusedOperatorRate), for
// the metrics.
//
// # Usage
//
//	l, err := edge.New(edge.Config{Rate: rate, TrustedProxies: proxies, Log: log})
//	srv.Handler = l.Wrap(srv.Handler)
package edge
