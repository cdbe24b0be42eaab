package pinterest

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Bounds used to tell the forms of x-ratelimit-reset apart.
const (
	// Values below this are seconds until the reset: 1e9 s is about 31
	// years, far beyond any rate-limit window, while unix times in seconds
	// have been above it since 2001.
	unixSecondsFloor = 1e9
	// Values from here on are unix times in milliseconds (a unix time in
	// seconds reaches 1e12 only in the year 33658).
	unixMillisFloor = 1e12
	// Values from here on are rejected as garbage.
	unixMillisCeil = 1e15
)

// resetAt returns the instant after which a request may be tried again,
// read from the headers of a 429 answer received at now.
//
// Pinterest does not document the unit of x-ratelimit-reset, so it is read
// defensively: a positive number below 1e9 is seconds until the reset, one
// up to 1e12 a unix time in seconds, one up to 1e15 a unix time in
// milliseconds; fractions are allowed. Retry-After is read as seconds or as
// an HTTP date. When both headers are usable the later instant wins. An
// instant that is not after now, a missing header and garbage are unusable;
// with nothing usable the result is now+fallback. The result is capped at
// now+MaxRateLimitWait.
func resetAt(h http.Header, now time.Time, fallback time.Duration) time.Time {
	var best time.Time
	if t, ok := parseRateLimitReset(h.Get("X-Ratelimit-Reset"), now); ok {
		best = t
	}
	if t, ok := parseRetryAfter(h.Get("Retry-After"), now); ok && t.After(best) {
		best = t
	}
	if best.IsZero() {
		best = now.Add(fallback)
	}
	if limit := now.Add(MaxRateLimitWait); best.After(limit) {
		best = limit
	}
	return best
}

// RetryWait returns the wait a 429 answer received at now asks for, read
// from its headers as the client reads them (x-ratelimit-reset and
// Retry-After, see RateLimitError), capped at MaxRateLimitWait; ok is false
// when they name none. The program's metrics observe it.
func RetryWait(h http.Header, now time.Time) (wait time.Duration, ok bool) {
	if t := resetAt(h, now, 0); t.After(now) {
		return t.Sub(now), true
	}
	return 0, false
}

// parseRateLimitReset reads an x-ratelimit-reset value; see resetAt.
func parseRateLimitReset(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 || f >= unixMillisCeil {
		return time.Time{}, false
	}
	var t time.Time
	switch {
	case f < unixSecondsFloor:
		t = now.Add(time.Duration(f * float64(time.Second)))
	case f < unixMillisFloor:
		sec, frac := math.Modf(f)
		t = time.Unix(int64(sec), int64(frac*1e9))
	default:
		t = time.UnixMilli(int64(f))
	}
	if !t.After(now) {
		return time.Time{}, false
	}
	return t, true
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > int64(MaxRateLimitWait/time.Second) {
			// Too large to be meant; resetAt caps it anyway.
			if n > 0 {
				return now.Add(MaxRateLimitWait), true
			}
			return time.Time{}, false
		}
		return now.Add(time.Duration(n) * time.Second), true
	}
	t, err := http.ParseTime(v)
	if err != nil || !t.After(now) {
		return time.Time{}, false
	}
	return t, true
}
