package pinterest

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestResetAt(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const fallback = 5 * time.Minute
	unix := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	tests := []struct {
		reset, retryAfter string
		want              time.Duration
	}{
		0:  {"", "", fallback},
		1:  {"30", "", 30 * time.Second},
		2:  {" 30 ", "", 30 * time.Second},
		3:  {"0.25", "", 250 * time.Millisecond},
		4:  {"0", "", fallback},
		5:  {"-1", "", fallback},
		6:  {"NaN", "", fallback},
		7:  {"Inf", "", fallback},
		8:  {"1e400", "", fallback},
		9:  {"tomorrow", "", fallback},
		10: {unix(time.Hour), "", time.Hour},
		11: {unix(-time.Hour), "", fallback},
		12: {strconv.FormatInt(now.Add(90*time.Second).UnixMilli(), 10), "", 90 * time.Second},
		13: {"1e15", "", fallback},
		14: {"", "120", 2 * time.Minute},
		15: {"", "0", fallback},
		16: {"", "-3", fallback},
		17: {"", now.Add(10 * time.Minute).Format(http.TimeFormat), 10 * time.Minute},
		18: {"", now.Add(-10 * time.Minute).Format(http.TimeFormat), fallback},
		19: {"600", "60", 10 * time.Minute},
		20: {"60", "600", 10 * time.Minute},
		21: {"garbage", "60", time.Minute},
		22: {"999999999", "", MaxRateLimitWait},
		23: {"", "99999999999", MaxRateLimitWait},
		24: {unix(48 * time.Hour), "", MaxRateLimitWait},
	}
	for i, tt := range tests {
		h := http.Header{}
		if tt.reset != "" {
			h.Set("X-Ratelimit-Reset", tt.reset)
		}
		if tt.retryAfter != "" {
			h.Set("Retry-After", tt.retryAfter)
		}
		if got := resetAt(h, now, fallback).Sub(now); got != tt.want {
			t.Errorf("step %d: resetAt(reset=%q, retry-after=%q) = now+%v want now+%v",
				i, tt.reset, tt.retryAfter, got, tt.want)
		}
	}
}

func TestParseErrorBody(t *testing.T) {
	tests := []struct {
		body string
		want errorBody
	}{
		0: {`{"code":283,"message":"The authorization grant is invalid"}`, errorBody{283, "The authorization grant is invalid", ""}},
		1: {`{"code":"8","message":"slow down"}`, errorBody{8, "slow down", ""}},
		2: {`{"error":"invalid_grant","error_description":"expired"}`, errorBody{0, "expired", "invalid_grant"}},
		3: {`<html>Bad Gateway</html>`, errorBody{}},
		4: {``, errorBody{}},
		5: {`{"code":1.5}`, errorBody{}},
	}
	for i, tt := range tests {
		if got := parseErrorBody([]byte(tt.body)); got != tt.want {
			t.Errorf("step %d: parseErrorBody(%q) = %+v want %+v", i, tt.body, got, tt.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("héllo", 2); got != "h" {
		t.Errorf("truncate cut a rune: %q", got)
	}
	if got := truncate("abc", 5); got != "abc" {
		t.Errorf("truncate(abc, 5) = %q", got)
	}
}

func BenchmarkResetAt(b *testing.B) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	h := http.Header{}
	h.Set("X-Ratelimit-Reset", "30")
	h.Set("Retry-After", "60")
	for b.Loop() {
		resetAt(h, now, time.Minute)
	}
}

// FuzzResetAt checks that any pair of headers yields a reset instant after
// now and no later than now+MaxRateLimitWait.
func FuzzResetAt(f *testing.F) {
	for _, s := range [][2]string{{"30", ""}, {"", "120"}, {"1e12", "Wed, 21 Oct 2015 07:28:00 GMT"}, {"-0", "x"}, {"1893553445", "0"}} {
		f.Add(s[0], s[1])
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, reset, retryAfter string) {
		h := http.Header{}
		h.Set("X-Ratelimit-Reset", reset)
		h.Set("Retry-After", retryAfter)
		got := resetAt(h, now, time.Minute)
		if !got.After(now) || got.After(now.Add(MaxRateLimitWait)) {
			t.Fatalf("resetAt(%q, %q) = now+%v", reset, retryAfter, got.Sub(now))
		}
	})
}

// FuzzParseErrorBody checks that any body yields a bounded message.
func FuzzParseErrorBody(f *testing.F) {
	f.Add([]byte(`{"code":283,"message":"The authorization grant is invalid"}`))
	f.Add([]byte(`{"error":"invalid_grant"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if eb := parseErrorBody(b); len(eb.message) > maxMessageBytes {
			t.Fatalf("message of %d bytes", len(eb.message))
		}
	})
}
