package pinterest

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Defaults applied by New to zero fields of BreakerConfig.
const (
	DefaultBreakerFailures = 5
	DefaultBreakerOpenFor  = 30 * time.Second
)

// The states of the circuit breaker, as Client.BreakerState and
// BreakerConfig.OnStateChange name them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// BreakerConfig configures the Client's circuit breaker. Every request
// the Client sends (the API's and the token endpoint's, which share
// APIBase's host) passes through it. Consecutive failures (a 5xx answer,
// a timeout, a connection that could not be made or broke) open it; a
// 4xx answer, 429 included, is Pinterest answering and counts as a
// success, and a request its caller gave up on counts for nothing. While
// open, every request fails at once with ErrCircuitOpen and nothing is
// sent. Once OpenFor has passed in monotonic time (Elapsed) it is
// half-open: one request goes through as a probe (the others still fail
// with ErrCircuitOpen); its success closes the breaker, its failure opens
// it again for OpenFor. The zero value of every field selects a default.
type BreakerConfig struct {
	// Failures is how many consecutive failures open the breaker;
	// default DefaultBreakerFailures.
	Failures int
	// OpenFor is how long the breaker stays open before it lets a probe
	// through; default DefaultBreakerOpenFor.
	OpenFor time.Duration
	// Elapsed is the clock OpenFor is measured on: monotonic time, elapsed
	// since an origin fixed for the Client's life. Default: the time
	// between Config.Now's readings as Time.Sub measures it, which for
	// time.Now's readings is Go's monotonic clock, so that the wall clock
	// set back neither holds an open breaker open longer, nor set forward
	// closes it early. Tests set it beside a Now whose readings carry no
	// monotonic time.
	Elapsed func() time.Duration
	// OnStateChange, when not nil, is called with the states before and
	// after every change of the breaker's state (BreakerClosed,
	// BreakerOpen, BreakerHalfOpen). It runs on the goroutine of the
	// request that caused the change, under the breaker's lock: it must
	// return quickly and must not call the Client. The change from open
	// to half-open is seen when a request (or BreakerState) comes after
	// OpenFor.
	OnStateChange func(from, to string)
}

// validate reports the first problem with b, naming the field.
func (b BreakerConfig) validate() error {
	switch {
	case b.Failures < 0:
		return errors.New("pinterest: Config.Breaker.Failures is negative")
	case b.OpenFor < 0:
		return errors.New("pinterest: Config.Breaker.OpenFor is negative")
	}
	return nil
}

// withDefaults returns b with zero fields set to their defaults.
func (b BreakerConfig) withDefaults() BreakerConfig {
	if b.Failures == 0 {
		b.Failures = DefaultBreakerFailures
	}
	if b.OpenFor == 0 {
		b.OpenFor = DefaultBreakerOpenFor
	}
	return b
}

// BreakerCounts are the circuit breaker's counts since its last change
// of state.
type BreakerCounts struct {
	// Requests is how many requests it let through.
	Requests uint32
	// Successes and Failures count their outcomes; Excluded counts those
	// their callers gave up on, which count as neither.
	Successes, Failures, Excluded uint32
	// ConsecutiveSuccesses and ConsecutiveFailures count the latest run.
	ConsecutiveSuccesses, ConsecutiveFailures uint32
}

// Outcomes reported to the breaker by the requests it let through.
var (
	// errBreakerFailure marks a failure: a 5xx answer or a transport
	// error while the caller still waited.
	errBreakerFailure = errors.New("pinterest: upstream failure")
	// errBreakerExcluded marks a request that says nothing about
	// Pinterest: its caller gave up on it.
	errBreakerExcluded = errors.New("pinterest: request abandoned by its caller")
)

// breaker is the Client's circuit breaker: gobreaker's state machine
// (consecutive failures, one probe at a time while half-open), with the
// open period kept on the breaker's own monotonic clock. gobreaker reads
// time.Now, so its own open period is set to a nanosecond and openUntil
// gates the requests instead: until then every request is refused
// without asking gobreaker, which therefore only moves to half-open once
// the period has passed on the breaker's clock.
type breaker struct {
	cb      *gobreaker.TwoStepCircuitBreaker[struct{}]
	elapsed func() time.Duration
	openFor time.Duration
	// openUntil is the end of the current open period, in nanoseconds of
	// elapsed; notOpen when not open.
	openUntil atomic.Int64

	// mu orders the calls of onChange.
	mu       sync.Mutex
	onChange func(from, to string)
}

// notOpen is openUntil when the breaker is not open: before every
// instant.
const notOpen = math.MinInt64

// newBreaker returns the breaker of cfg, measuring its open period on
// cfg.Elapsed, else on the time between now's readings.
func newBreaker(name string, cfg BreakerConfig, now func() time.Time) *breaker {
	elapsed := cfg.Elapsed
	if elapsed == nil {
		origin := now()
		elapsed = func() time.Duration { return now().Sub(origin) }
	}
	b := &breaker{elapsed: elapsed, openFor: cfg.OpenFor, onChange: cfg.OnStateChange}
	b.openUntil.Store(notOpen)
	failures := uint32(cfg.Failures)
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     time.Nanosecond,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsExcluded:  func(err error) bool { return errors.Is(err, errBreakerExcluded) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			switch to {
			case gobreaker.StateOpen:
				b.openUntil.Store(int64(b.elapsed() + b.openFor))
			default:
				b.openUntil.Store(notOpen)
			}
			if b.onChange != nil {
				b.mu.Lock()
				defer b.mu.Unlock()
				b.onChange(from.String(), to.String())
			}
		},
	})
	return b
}

// gated reports whether the open period still runs at now, an instant
// of elapsed.
func (b *breaker) gated(now time.Duration) bool {
	return int64(now) < b.openUntil.Load()
}

// allow asks to send a request. It returns the function that reports the
// request's outcome (nil, errBreakerFailure or errBreakerExcluded), or
// ErrCircuitOpen when the breaker refuses it.
func (b *breaker) allow() (func(error), error) {
	if b.gated(b.elapsed()) {
		return nil, ErrCircuitOpen
	}
	done, err := b.cb.Allow()
	if err != nil {
		return nil, ErrCircuitOpen
	}
	// The breaker may have opened between the check above and Allow,
	// which then saw its nanosecond pass and let this request through as
	// the half-open probe: give the place back.
	if b.gated(b.elapsed()) {
		done(errBreakerExcluded)
		return nil, ErrCircuitOpen
	}
	return done, nil
}

// state returns the breaker's state at now.
func (b *breaker) state() string {
	if b.gated(b.elapsed()) {
		return BreakerOpen
	}
	return b.cb.State().String()
}

// counts returns the breaker's counts since its last change of state.
func (b *breaker) counts() BreakerCounts {
	c := b.cb.Counts()
	return BreakerCounts{
		Requests:             c.Requests,
		Successes:            c.TotalSuccesses,
		Failures:             c.TotalFailures,
		Excluded:             c.TotalExclusions,
		ConsecutiveSuccesses: c.ConsecutiveSuccesses,
		ConsecutiveFailures:  c.ConsecutiveFailures,
	}
}

// BreakerState returns the state of the Client's circuit breaker:
// BreakerClosed, BreakerOpen or BreakerHalfOpen (see BreakerConfig). It
// is safe to call at any time, for example from a metrics collector.
func (c *Client) BreakerState() string { return c.breaker.state() }

// BreakerCounts returns the circuit breaker's counts since its last
// change of state.
func (c *Client) BreakerCounts() BreakerCounts { return c.breaker.counts() }
