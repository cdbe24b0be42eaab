package digest

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/disgoorg/disgo/rest"
)

// outcome is what became of a request to Discord.
type outcome uint8

const (
	// done: Discord did it.
	done outcome = iota
	// dmsClosed: the user accepts no DM from the bot (code 50007, "Cannot
	// send messages to this user"), or Discord refused to open the DM
	// channel.
	dmsClosed
	// refused: 403 or 404, the bot cannot post in the channel (Missing
	// Access, Missing Permissions, Unknown Channel).
	refused
	// rateLimited: 429; try again after its retry_after.
	rateLimited
	// failed: a 5xx, a timeout or a broken connection; try again later.
	failed
	// invalid: another 4xx; this message can never be sent.
	invalid
)

func (o outcome) String() string {
	switch o {
	case done:
		return "done"
	case dmsClosed:
		return "DMs closed"
	case refused:
		return "refused"
	case rateLimited:
		return "rate limited"
	case failed:
		return "failed"
	case invalid:
		return "invalid"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// dmRefusals are Discord's JSON error codes for a DM the user does not
// accept: closed DMs or a blocked bot (50007), no guild in common (50278).
var dmRefusals = []rest.JSONErrorCode{
	rest.JSONErrorCodeCannotSendMessagesToThisUser,
	rest.JSONErrorCodeCannotSendMessagesToThisUserDueToHavingNoMutualGuilds,
}

// defaultRetryAfter is the wait after a 429 that says nothing usable.
const defaultRetryAfter = time.Second

// classify returns what err, from a request to Discord, means, and for a
// 429 how long Discord asked to wait.
func classify(err error) (outcome, time.Duration) {
	if err == nil {
		return done, 0
	}
	var re *rest.Error
	if !errors.As(err, &re) || re.Response == nil {
		// No answer: a timeout, a broken connection, a refused dial, or the
		// rate limiter giving up before the request's deadline.
		return failed, 0
	}
	status := re.Response.StatusCode
	switch {
	case slices.Contains(dmRefusals, re.Code):
		return dmsClosed, 0
	case status == http.StatusTooManyRequests:
		return rateLimited, retryAfter(re)
	case status == http.StatusForbidden || status == http.StatusNotFound:
		return refused, 0
	case status >= 500:
		return failed, 0
	}
	return invalid, 0
}

// retryAfter reads a 429's wait: retry_after in the body (seconds,
// fractional), else the Retry-After header (whole seconds), else
// defaultRetryAfter.
func retryAfter(re *rest.Error) time.Duration {
	var body struct {
		RetryAfter *float64 `json:"retry_after"`
	}
	if json.Unmarshal(re.RsBody, &body) == nil && body.RetryAfter != nil && *body.RetryAfter >= 0 && *body.RetryAfter <= 86400 {
		return time.Duration(*body.RetryAfter * float64(time.Second))
	}
	if v, err := strconv.ParseFloat(re.Response.Header.Get("Retry-After"), 64); err == nil && v >= 0 && v <= 86400 {
		return time.Duration(v * float64(time.Second))
	}
	return defaultRetryAfter
}
