package digest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/pinbot/pinbot/bot/internal/discordio"
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

// classify returns what err, from a request to Discord, means, and for a
// 429 how long Discord asked to wait.
func classify(err error) (outcome, time.Duration) {
	if err == nil {
		return done, 0
	}
	e, ok := discordio.AsError(err)
	if !ok {
		// No answer: a timeout, a broken connection, a refused dial, or the
		// rate limiter giving up before the request's deadline.
		return failed, 0
	}
	switch {
	case discordio.DMRefused(err):
		return dmsClosed, 0
	case e.Status == http.StatusTooManyRequests:
		return rateLimited, e.RetryAfter
	case e.Status == http.StatusForbidden || e.Status == http.StatusNotFound:
		return refused, 0
	case e.Status >= 500:
		return failed, 0
	}
	return invalid, 0
}
