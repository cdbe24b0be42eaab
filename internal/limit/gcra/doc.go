// Package gcra limits how fast each of many keys (a client address, a
// user) may go, with the generic cell rate algorithm: a Rate of Limit
// units per Period lets a key spend Burst units at once, then one unit
// every Period/Limit. Requests may cost more than one unit. A Limiter is
// a limit.Policy, and its Decisions are exact.
//
// GCRA keeps one instant per key, its theoretical arrival time (TAT): a
// request costing n at now is allowed if max(TAT, now) + n·T − Burst·T is
// not after now, where T is Period/Limit, and then moves the TAT there.
// It is a token bucket in other words, and the TAT gives the figures a
// client is told exactly: how many units are left, when the bucket is
// full again, and when a refused request would be allowed.
//
// Time is always an argument, as in golang.org/x/time/rate's AllowN, and
// it is monotonic time: an instant is the time elapsed since an origin
// the caller keeps fixed for the Limiter's life, never a reading of the
// wall clock. The wall clock may be set back or forward at any moment:
// set back by D, instants kept from it would lock out every key recently
// allowed for about D; set forward, they would let keys through early.
// Since makes a clock of instants from a clock of times; on time.Now it
// is Go's monotonic clock.
//
// # Usage
//
//	r, err := gcra.ParseRate("20/m")      // 20 a minute, 20 at once
//	l := gcra.NewLimiter(r, 100_000)      // at most 100,000 keys kept
//	elapsed := gcra.Since(time.Now)       // monotonic instants
//	res := l.AllowN("203.0.113.7", elapsed(), 1)
//	if !res.Allowed {
//		// refuse; try again after res.RetryAfter
//	}
//
// # Memory
//
// A key whose TAT is not after now is in the same state as a key never
// seen, so it is forgotten: each call drops such keys from the least
// recently used end. At most maxKeys are kept; a new key beyond them
// evicts the least recently used one, which then starts afresh.
package gcra
