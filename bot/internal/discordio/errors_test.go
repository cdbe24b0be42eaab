package discordio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/disgoorg/disgo/rest"
)

// answered is disgo's error for a request Discord answered with status,
// code, body and header pairs, wrapped as disgo's callers see it.
func answered(status int, code rest.JSONErrorCode, body string, header ...string) error {
	rs := &http.Response{StatusCode: status, Header: http.Header{}}
	for i := 0; i+1 < len(header); i += 2 {
		rs.Header.Set(header[i], header[i+1])
	}
	return fmt.Errorf("wrapped: %w", &rest.Error{Response: rs, RsBody: []byte(body), Code: code, Message: "m"})
}

// TestWrap: Discord's refusals become *Error, classified as the bot acts
// on them; an error without an answer stays as it is.
func TestWrap(t *testing.T) {
	type want struct {
		status                                int
		notFound, forbidden, dmRefused, refus bool
		retry                                 time.Duration
	}
	steps := []struct {
		err  error
		want want
	}{
		{answered(404, 10008, `{}`), want{status: 404, notFound: true, refus: true}},
		{answered(404, 0, ``), want{status: 404, notFound: true, refus: true}},
		{answered(403, 10003, `{}`), want{status: 403, notFound: true, refus: true}},
		{answered(403, 50001, `{}`), want{status: 403, forbidden: true, refus: true}},
		{answered(404, 50001, `{}`), want{status: 404, forbidden: true, refus: true}},
		{answered(403, 0, ``), want{status: 403, forbidden: true, refus: true}},
		{answered(403, 50007, `{}`), want{status: 403, forbidden: true, dmRefused: true, refus: true}},
		{answered(400, 50278, `{}`), want{status: 400, dmRefused: true, refus: true}},
		{answered(400, 40060, `{}`), want{status: 400, refus: true}},
		{answered(429, 0, `{"retry_after":2.5,"global":false}`, "Retry-After", "3"), want{status: 429, refus: true, retry: 2500 * time.Millisecond}},
		{answered(429, 0, ``, "Retry-After", "3"), want{status: 429, refus: true, retry: 3 * time.Second}},
		{answered(429, 0, `{"retry_after":-1}`), want{status: 429, refus: true, retry: defaultRetryAfter}},
		{answered(502, 0, `bad gateway`), want{status: 502}},
	}
	for i, st := range steps {
		err := Wrap(st.err)
		e, ok := AsError(err)
		if !ok {
			t.Errorf("step %d: Wrap(%v) = %v, not an *Error", i, st.err, err)
			continue
		}
		var re *rest.Error
		if !errors.As(err, &re) {
			t.Errorf("step %d: disgo's error is lost", i)
		}
		got := want{e.Status, NotFound(err), Forbidden(err), DMRefused(err), Refused(err), e.RetryAfter}
		if got != st.want {
			t.Errorf("step %d: %v classified %+v, want %+v", i, st.err, got, st.want)
		}
	}
	for _, err := range []error{nil, context.DeadlineExceeded, errors.New("connection refused"), &rest.Error{}} {
		if got := Wrap(err); got != err {
			t.Errorf("Wrap(%v) = %v, want it unchanged", err, got)
		}
		if NotFound(err) || Forbidden(err) || DMRefused(err) || Refused(err) {
			t.Errorf("%v classified as an answer", err)
		}
	}
}
