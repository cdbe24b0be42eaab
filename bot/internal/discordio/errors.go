package discordio

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/disgoorg/disgo/rest"
)

// Discord's JSON error codes the bot acts on.
const (
	// CodeUnknownInteraction: the interaction's token is no longer
	// valid (too late, or never).
	CodeUnknownInteraction = 10062
	// CodeMissingAccess: the bot may not see the object.
	CodeMissingAccess = 50001
	// CodeCannotDM: the user's DMs are closed, or they blocked the bot.
	CodeCannotDM = 50007
	// CodeNoMutualGuilds: the bot shares no guild with the user.
	CodeNoMutualGuilds = 50278
	// CodeAlreadyAcknowledged: the interaction was already answered.
	CodeAlreadyAcknowledged = 40060
)

// Error is Discord's answer to a request it refused.
type Error struct {
	// Status is the HTTP status; Code Discord's JSON error code (0 when
	// the body has none) and Message its text.
	Status  int
	Code    int
	Message string
	// RetryAfter is, for a 429, how long Discord asked to wait (its
	// body's retry_after, else Retry-After, else a second).
	RetryAfter time.Duration
	err        error
}

func (e *Error) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	s := "discord: HTTP " + strconv.Itoa(e.Status)
	if e.Code != 0 {
		s += fmt.Sprintf(" (code %d)", e.Code)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Unwrap returns disgo's error, when Discord's answer came through disgo.
func (e *Error) Unwrap() error { return e.err }

// defaultRetryAfter is the wait after a 429 that says nothing usable.
const defaultRetryAfter = time.Second

// Wrap turns disgo's *rest.Error for an answered request (anywhere in
// err's chain) into an *Error; any other error is returned as it is.
func Wrap(err error) error {
	var re *rest.Error
	if err == nil || !errors.As(err, &re) || re.Response == nil {
		return err
	}
	e := &Error{Status: re.Response.StatusCode, Code: int(re.Code), Message: re.Message, err: err}
	if e.Status == http.StatusTooManyRequests {
		e.RetryAfter = retryAfter(re)
	}
	return e
}

// retryAfter reads a 429's wait: retry_after in the body (seconds,
// fractional), else the Retry-After header, else defaultRetryAfter.
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

// AsError returns Discord's refusal behind err, if err is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// kind classifies Discord's refusals of reads.
type kind int

const (
	kindOther kind = iota
	kindNotFound
	kindForbidden
)

func kindOf(err error) kind {
	e, ok := AsError(err)
	switch {
	case !ok:
		return kindOther
	case e.Code >= 10001 && e.Code < 20000:
		return kindNotFound
	case e.Code == CodeMissingAccess:
		return kindForbidden
	case e.Status == http.StatusNotFound:
		return kindNotFound
	case e.Status == http.StatusForbidden:
		return kindForbidden
	}
	return kindOther
}

// NotFound reports whether Discord answered that the object does not
// exist (an Unknown ... code, or a 404).
func NotFound(err error) bool { return kindOf(err) == kindNotFound }

// Forbidden reports whether Discord answered that the bot may not see or
// do it (50001 Missing Access, or a 403).
func Forbidden(err error) bool { return kindOf(err) == kindForbidden }

// DMRefused reports whether Discord refused a DM because of the user:
// closed DMs or a blocked bot, or no guild in common.
func DMRefused(err error) bool {
	e, ok := AsError(err)
	return ok && (e.Code == CodeCannotDM || e.Code == CodeNoMutualGuilds)
}

// Refused reports whether Discord answered the request with a client
// error (4xx): it did not take effect, and sending it again as it is
// would not help.
func Refused(err error) bool {
	e, ok := AsError(err)
	return ok && e.Status >= 400 && e.Status < 500
}
