package gcra

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is Limit units per Period, of which Burst may be spent at once.
// The zero value is no rate at all; Validate says whether a Rate is
// usable.
type Rate struct {
	// Limit is how many units a key may spend per Period, at least 1.
	Limit int
	// Period is the length of time Limit applies to; the interval
	// between units, Period/Limit, must be at least a microsecond.
	Period time.Duration
	// Burst is how many units a key may spend at once; 0 means Limit.
	Burst int
}

// MaxLimit bounds Rate.Limit and Rate.Burst.
const MaxLimit = 1 << 20

// IsZero reports whether r is the zero Rate.
func (r Rate) IsZero() bool { return r == Rate{} }

// Validate reports the first problem with r.
func (r Rate) Validate() error {
	switch {
	case r.Limit < 1 || r.Limit > MaxLimit:
		return fmt.Errorf("gcra: limit %d is not between 1 and %d", r.Limit, MaxLimit)
	case r.Period <= 0:
		return fmt.Errorf("gcra: period %v is not positive", r.Period)
	case r.Burst < 0 || r.Burst > MaxLimit:
		return fmt.Errorf("gcra: burst %d is not between 0 (the limit) and %d", r.Burst, MaxLimit)
	case r.Period/time.Duration(r.Limit) < time.Microsecond:
		return fmt.Errorf("gcra: %d per %v is more than one a microsecond", r.Limit, r.Period)
	case r.Interval() > maxSpan/time.Duration(r.burst()):
		return fmt.Errorf("gcra: a burst of %d at %d per %v takes more than %v to come back", r.burst(), r.Limit, r.Period, maxSpan)
	}
	return nil
}

// maxSpan bounds the time a full burst takes to come back, so that
// instants stay far from overflowing int64 nanoseconds.
const maxSpan = 10 * 366 * 24 * time.Hour

// Interval is the time one unit takes to come back: Period/Limit,
// rounded down to the nanosecond.
func (r Rate) Interval() time.Duration { return r.Period / time.Duration(r.Limit) }

// burst returns how many units may be spent at once.
func (r Rate) burst() int {
	if r.Burst == 0 {
		return r.Limit
	}
	return r.Burst
}

// String writes r as ParseRate reads it: "20/1m0s", with ",burst=B" when
// Burst is set.
func (r Rate) String() string {
	s := strconv.Itoa(r.Limit) + "/" + r.Period.String()
	if r.Burst != 0 {
		s += ",burst=" + strconv.Itoa(r.Burst)
	}
	return s
}

// units are the periods ParseRate accepts as a bare unit: "20/m".
var units = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}

// errSyntax is the shape ParseRate wants.
var errSyntax = errors.New(`want N/PERIOD with an optional ",burst=B", such as "20/m", "60/10m" or "5/s,burst=20" (PERIOD is s, m, h, d or a Go duration such as 90s)`)

// ParseRate reads a Rate written "N/PERIOD" or "N/PERIOD,burst=B": N units
// per PERIOD, where PERIOD is a unit (s, m, h or d) or a Go duration
// ("10m", "90s"), and B the units that may be spent at once (default N).
// "20/m" is 20 a minute, 20 at once. The Rate is validated. An error
// wraps one that says what is wrong without quoting s.
func ParseRate(s string) (Rate, error) {
	r, err := parseRate(strings.TrimSpace(s))
	if err != nil {
		return Rate{}, fmt.Errorf("gcra: rate %q: %w", s, err)
	}
	return r, nil
}

func parseRate(s string) (Rate, error) {
	spec, burst, hasBurst := strings.Cut(s, ",")
	n, period, ok := strings.Cut(spec, "/")
	if !ok {
		return Rate{}, errSyntax
	}
	var r Rate
	var err error
	if r.Limit, err = strconv.Atoi(strings.TrimSpace(n)); err != nil {
		return Rate{}, fmt.Errorf("%q is not a whole number: %w", n, errSyntax)
	}
	period = strings.TrimSpace(period)
	if d, ok := units[period]; ok {
		r.Period = d
	} else if r.Period, err = time.ParseDuration(period); err != nil {
		return Rate{}, fmt.Errorf("%q is not a period: %w", period, errSyntax)
	}
	if hasBurst {
		v, ok := strings.CutPrefix(strings.TrimSpace(burst), "burst=")
		if !ok {
			return Rate{}, errSyntax
		}
		if r.Burst, err = strconv.Atoi(v); err != nil || r.Burst < 1 {
			return Rate{}, fmt.Errorf("burst %q is not a whole number from 1: %w", v, errSyntax)
		}
	}
	if err := r.Validate(); err != nil {
		return Rate{}, errors.New(strings.TrimPrefix(err.Error(), "gcra: "))
	}
	return r, nil
}
