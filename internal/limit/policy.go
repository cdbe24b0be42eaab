package limit

import "time"

// Policy limits how fast each of many keys may go. It answers at once,
// for one request, whether it may go ahead, and spends its units only
// then. Time is an argument, in monotonic time: the time elapsed since an
// origin the caller keeps fixed for the Policy's life (see gcra.Since).
// Implementations are safe for simultaneous use by multiple goroutines.
//
// Every Policy meets the contract TestPolicies checks: it never lets a
// key spend more than Limit units at one instant, nor more than its rate
// allows over any span; a refused request spends nothing; and the
// figures of a Decision are exact, so that a client told to retry after
// RetryAfter is allowed then and not a nanosecond before.
type Policy interface {
	// AllowN decides whether key may spend n units at now (1 ≤ n ≤ the
	// Decision's Limit), and spends them if so. Successive calls pass
	// instants that never go back.
	AllowN(key string, now time.Duration, n int) Decision
}

// Decision is what a Policy decided for one request, with the figures to
// tell the client (the RateLimit-* and Retry-After headers, a user's
// "try again at").
type Decision struct {
	// Allowed says whether the request may go ahead; its units were
	// spent only then.
	Allowed bool
	// Limit is how many units may be spent at once (a rate's burst).
	Limit int
	// Remaining is how many units the key may still spend at now, after
	// this request.
	Remaining int
	// ResetAfter is how long until the key may spend Limit units again
	// (0 when it already may).
	ResetAfter time.Duration
	// RetryAfter is, for a refused request, how long until the same
	// request would be allowed; 0 when allowed.
	RetryAfter time.Duration
}
