package pinterest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"
)

// Defaults applied by New to zero fields of RetryConfig.
const (
	DefaultMaxAttempts = 3
	DefaultBaseDelay   = 250 * time.Millisecond
	DefaultMaxDelay    = 5 * time.Second
	DefaultMaxWait     = 10 * time.Second
)

// RetryConfig says how the Client repeats the requests that are safe to
// repeat: GET requests after a 5xx answer, a 429 or a transport error,
// and token requests that provably never reached Pinterest (their
// connection was never made). POST /pins is never repeated (see
// ErrOutcomeUnknown). The zero value of every field selects a default.
//
// The k-th wait (k from 1) is drawn uniformly from [0, min(MaxDelay,
// BaseDelay·2^(k−1))): exponential backoff with full jitter, so that
// callers failing together do not come back together. After a 429 the
// wait is at least until the reset Pinterest announced.
type RetryConfig struct {
	// MaxAttempts bounds the tries of one request, the first included;
	// default DefaultMaxAttempts. 1 never repeats.
	MaxAttempts int
	// BaseDelay is the bound of the first wait; default DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps the bound of every wait; default DefaultMaxDelay.
	MaxDelay time.Duration
	// MaxWait is the longest wait the Client takes on a caller's behalf,
	// before a repeat or before a request its rate-limit pause holds
	// back (see Client); a longer one fails at once, with a
	// *RateLimitError when a rate limit is the cause. Default
	// DefaultMaxWait.
	MaxWait time.Duration
	// Rand returns a uniform random integer in [0, n), n > 0; default
	// math/rand/v2's Int64N. It must be safe for simultaneous use.
	Rand func(n int64) int64
	// Sleep waits for d, or until ctx ends and then returns its error;
	// default a timer. Tests pass one that moves a fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
}

// validate reports the first problem with r, naming the field.
func (r RetryConfig) validate() error {
	switch {
	case r.MaxAttempts < 0:
		return errors.New("pinterest: Config.Retry.MaxAttempts is negative")
	case r.BaseDelay < 0:
		return errors.New("pinterest: Config.Retry.BaseDelay is negative")
	case r.MaxDelay < 0:
		return errors.New("pinterest: Config.Retry.MaxDelay is negative")
	case r.MaxWait < 0:
		return errors.New("pinterest: Config.Retry.MaxWait is negative")
	}
	return nil
}

// withDefaults returns r with zero fields set to their defaults.
func (r RetryConfig) withDefaults() RetryConfig {
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	if r.BaseDelay == 0 {
		r.BaseDelay = DefaultBaseDelay
	}
	if r.MaxDelay == 0 {
		r.MaxDelay = DefaultMaxDelay
	}
	if r.MaxWait == 0 {
		r.MaxWait = DefaultMaxWait
	}
	if r.Rand == nil {
		r.Rand = rand.Int64N
	}
	if r.Sleep == nil {
		r.Sleep = sleep
	}
	return r
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// backoff returns the bound of the k-th wait (k from 1): min(maxDelay,
// base·2^(k−1)), or 0 when k < 1 or base ≤ 0. The wait itself is drawn
// uniformly below it (full jitter).
func backoff(base, maxDelay time.Duration, k int) time.Duration {
	if k < 1 || base <= 0 {
		return 0
	}
	d := base
	for i := 1; i < k && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}

// jitter draws the k-th wait: uniform in [0, backoff(k)).
func (c *Client) jitter(k int) time.Duration {
	bound := backoff(c.cfg.Retry.BaseDelay, c.cfg.Retry.MaxDelay, k)
	if bound <= 0 {
		return 0
	}
	return time.Duration(c.cfg.Retry.Rand(int64(bound)))
}

// retry decides whether to repeat op after its attempt-th failure, and
// waits before it: a jittered backoff, at least floor (a 429's reset).
// It reports false, without waiting, when the attempts are spent, when
// the wait exceeds MaxWait, or when after it a request would no longer
// fit before ctx's send deadline; and false when ctx ends while waiting.
func (c *Client) retry(ctx context.Context, op string, attempt int, floor time.Duration) bool {
	if attempt >= c.cfg.Retry.MaxAttempts {
		return false
	}
	wait := max(c.jitter(attempt), floor)
	if wait > c.cfg.Retry.MaxWait {
		return false
	}
	if d, ok := ctx.Value(sendDeadlineKey{}).(sendDeadline); ok && d.by.Sub(d.now().Add(wait)) < c.cfg.RequestTimeout {
		return false
	}
	c.logger(ctx).Debug().Str("op", op).Int("attempt", attempt).Dur("wait", wait).Msg("pinterest request failed, retrying")
	return c.cfg.Retry.Sleep(ctx, wait) == nil
}

// isDialError reports whether err comes from failing to connect (a DNS
// lookup included): the request never left, so it reached nothing.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// gaveUp wraps err, the last failure of op, for a caller whose ctx ended
// while the Client waited to repeat it.
func gaveUp(ctx context.Context, op string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%w (pinterest: %s: stopped waiting to retry: %w)", err, op, ctx.Err())
}
