package digest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/disgoorg/disgo/rest"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

func TestClassify(t *testing.T) {
	answer := func(status int, code rest.JSONErrorCode, body string, header ...string) error {
		rs := &http.Response{StatusCode: status, Header: http.Header{}}
		for i := 0; i+1 < len(header); i += 2 {
			rs.Header.Set(header[i], header[i+1])
		}
		return discordio.Wrap(fmt.Errorf("wrapped: %w", &rest.Error{Response: rs, RsBody: []byte(body), Code: code}))
	}
	steps := []struct {
		err  error
		want outcome
		wait time.Duration
	}{
		{nil, done, 0},
		{answer(403, 50007, `{"message":"Cannot send messages to this user","code":50007}`), dmsClosed, 0},
		{answer(400, 50278, `{}`), dmsClosed, 0},
		{answer(429, 0, `{"message":"You are being rate limited.","retry_after":2.5,"global":false}`, "Retry-After", "3"), rateLimited, 2500 * time.Millisecond},
		{answer(429, 0, ``, "Retry-After", "3"), rateLimited, 3 * time.Second},
		{answer(429, 0, `{"retry_after":-1}`), rateLimited, time.Second},
		{answer(403, 50013, `{}`), refused, 0},
		{answer(403, 50001, `{}`), refused, 0},
		{answer(404, 10003, `{}`), refused, 0},
		{answer(502, 0, `bad gateway`), failed, 0},
		{answer(500, 0, `{}`), failed, 0},
		{errors.New("error doing request in rest client: connection refused"), failed, 0},
		{fmt.Errorf("error doing request in rest client: %w", context.DeadlineExceeded), failed, 0},
		{answer(400, 50035, `{}`), invalid, 0},
		{answer(401, 0, `{}`), invalid, 0},
	}
	for i, st := range steps {
		got, wait := classify(st.err)
		if got != st.want || wait != st.wait {
			t.Errorf("step %d: classify(%v) = %v, %v want %v, %v", i, st.err, got, wait, st.want, st.wait)
		}
	}
}
