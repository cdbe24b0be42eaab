package bot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/pinterest"
)

// TestClassifySend: each failure of a sent pin is classified once, and
// the two paths report it as before: a command's line (reason, why), or a
// queued pin's outcome (unknown, a retry after a wait, or failed).
func TestClassifySend(t *testing.T) {
	dial := &net.OpError{Op: "dial", Err: errors.New("refused")}
	rate := &pinterest.RateLimitError{Wait: 90 * time.Second}
	spam := &pinterest.RateLimitError{Wait: time.Hour, Spam: true}
	bad := &pinterest.APIError{Status: http.StatusBadRequest, Message: "no such board"}
	gone := &pinterest.APIError{Status: http.StatusNotFound, Message: "gone"}
	unknown := "Pinterest did not answer clearly; the pin may exist, so it counts toward the limit"
	tests := []struct {
		name        string
		err         error
		ended       bool
		kind        sendKind
		reason, why string
		queued      actors.Outcome
	}{
		{"outcome unknown", fmt.Errorf("%w: 502", pinterest.ErrOutcomeUnknown), false, sentUnknown, failOutcomeUnknown,
			"Pinterest did not answer clearly (a server error or a timeout); the pin may exist, so it counts toward the limit",
			actors.Outcome{Unknown: true, Result: jobResult{Outcome: jobUnknown, Reason: failOutcomeUnknown, Why: unknown}.encode()}},
		{"unknown but never dialled", fmt.Errorf("%w: %w", pinterest.ErrOutcomeUnknown, dial), false, sentRetry, failUnavailable,
			"Pinterest is not answering", actors.Outcome{Retry: true, RetryAfter: jobRetryUnreachable}},
		{"no time", pinterest.ErrNoTime, false, sentRetry, failNoTime,
			"Pinterest was too slow to renew Pinbot's access in time, so it was not sent", actors.Outcome{Retry: true, RetryAfter: jobRetryUnreachable}},
		{"slot deadline", context.DeadlineExceeded, false, sentRetry, failNoTime,
			"Pinterest was too slow to renew Pinbot's access in time, so it was not sent", actors.Outcome{Retry: true, RetryAfter: jobRetryUnreachable}},
		{"command out of time", context.DeadlineExceeded, true, sentRetry, failTimeout,
			"the command ran out of time", actors.Outcome{Retry: true, RetryAfter: jobRetryShutdown}},
		{"unavailable", pinterest.ErrUnavailable, false, sentRetry, failUnavailable,
			"Pinterest is not answering", actors.Outcome{Retry: true, RetryAfter: jobRetryUnreachable}},
		{"rate limited", rate, false, sentRetry, failRateLimited,
			"Pinterest rate limited this account", actors.Outcome{Retry: true, RetryAfter: 90 * time.Second}},
		{"spam block", spam, false, sentFailed, failSpamBlock,
			"blocked by Pinterest's spam protection", failedJob(failSpamBlock, "blocked by Pinterest's spam protection")},
		{"reauth", pinterest.ErrReauthRequired, false, sentFailed, failReauth,
			"Pinterest refused Pinbot's access to the account", failedJob(failReauth, "Pinterest refused Pinbot's access to the account; run /link")},
		{"image rejected", pinterest.ErrImageRejected, false, sentFailed, failImageRejected,
			"Pinterest could not use this image", failedJob(failImageRejected, "Pinterest could not use this image")},
		{"refused", bad, false, sentFailed, failRefused,
			"Pinterest refused it: no such board", failedJob(failRefused, "Pinterest refused it: no such board")},
		{"refused otherwise", gone, true, sentFailed, failRefused,
			"Pinterest refused it (HTTP 404): gone", failedJob(failRefused, "Pinterest refused it (HTTP 404): gone")},
		{"canceled", context.Canceled, true, sentRetry, failTimeout,
			"the command ran out of time", actors.Outcome{Retry: true, RetryAfter: jobRetryShutdown}},
		{"not sent", errors.New("tls: bad certificate"), false, sentFailed, failUnavailable,
			"it could not be sent to Pinterest", failedJob(failUnavailable, "it could not be sent to Pinterest")},
	}
	for _, tt := range tests {
		r := classifySend(tt.err, tt.ended)
		if r.kind != tt.kind || r.reason != tt.reason || r.why != tt.why {
			t.Errorf("%s: kind %d, reason %q, why %q; want %d, %q, %q", tt.name, r.kind, r.reason, r.why, tt.kind, tt.reason, tt.why)
		}
		got := queuedOutcome(r)
		if got.Retry != tt.queued.Retry || got.RetryAfter != tt.queued.RetryAfter || got.Unknown != tt.queued.Unknown ||
			got.Done != tt.queued.Done || string(got.Result) != string(tt.queued.Result) {
			t.Errorf("%s: queued outcome %+v (%s), want %+v (%s)", tt.name, got, got.Result, tt.queued, tt.queued.Result)
		}
	}
	if r := classifySend(spam, false); r.wait != time.Hour {
		t.Errorf("a spam block waits %v, want Pinterest's hour: the account is held for it", r.wait)
	}
}
