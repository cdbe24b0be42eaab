package pinterest

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors returned by the Client. Match them with errors.Is; the concrete
// *APIError (errors.As) carries the HTTP status, Pinterest's error code and
// the response's x-pinterest-rid, and a *RateLimitError carries the instant
// after which to try again.
var (
	// ErrReauthRequired means the account's grant is gone: Pinterest
	// answered a refresh with an invalid grant (refresh token expired,
	// revoked, or already used once rotation replaced it), or kept
	// answering 401 right after a successful refresh. Only a new
	// authorization by the user helps. Once a Session has seen an invalid
	// grant it returns this error without contacting Pinterest again.
	ErrReauthRequired = errors.New("pinterest: reauthorization required")

	// ErrRateLimited means Pinterest answered 429. The error is a
	// *RateLimitError; nothing was created.
	ErrRateLimited = errors.New("pinterest: rate limited")

	// ErrSpamBlocked means a 429 came from Pinterest's spam and abuse
	// defences rather than from an ordinary rate limit. Such an error also
	// matches ErrRateLimited; check ErrSpamBlocked first when the two call
	// for different handling.
	ErrSpamBlocked = errors.New("pinterest: blocked by spam protection")

	// ErrImageRejected means Pinterest refused the pin's image: it could
	// not fetch it, or it was not a valid image. That pin fails and was
	// not created; other pins can go on.
	ErrImageRejected = errors.New("pinterest: image rejected")

	// ErrOutcomeUnknown means POST /pins failed in a way that leaves open
	// whether the pin was created: a 5xx answer, a timeout, a broken
	// connection, or a success answer that could not be read. Pinterest
	// offers no idempotency key, so the Client never retries pin creation;
	// callers must count the pin as possibly created.
	ErrOutcomeUnknown = errors.New("pinterest: outcome unknown, the pin may exist")

	// ErrNoTime means a request was not sent because it could have
	// ended after the send deadline of the call's context (see
	// WithSendDeadline). Nothing was sent for it; a POST /pins refused
	// so, even after a 401 answered first, created nothing.
	ErrNoTime = errors.New("pinterest: not sent: too little time left before the deadline")

	// ErrUnavailable means a request without side effects (a GET, or a
	// token request) failed with a 5xx answer or a transport error, after
	// its retries where retrying is allowed (see RetryConfig). Trying
	// later may succeed.
	ErrUnavailable = errors.New("pinterest: service unavailable")

	// ErrScopesMissing means Pinterest granted an authorization fewer
	// scopes than the Client asked for (Config.Scopes), so that some of
	// the bot's calls would fail with its token. From Exchange the error
	// is a *ScopeError, and the token was dropped. From a call, it is an
	// *APIError that also matches ErrReauthRequired: Pinterest refused
	// the token for lacking a scope the call needs (its 401 with code 3),
	// even after a refresh, as for an account linked when pinbot asked
	// for fewer scopes; the user must authorize again.
	ErrScopesMissing = errors.New("pinterest: grant lacks scopes the bot needs")

	// ErrListingTruncated means ListPins stopped at its bound on pages
	// (ListOptions.MaxPages) before reaching its end or
	// ListOptions.Since: pins older than those it returned were not read.
	ErrListingTruncated = errors.New("pinterest: listing stopped at its page bound")

	// ErrListingUnordered means a listing of pins with
	// ListOptions.Since was not newest first: a pin came after an older
	// one. Stopping at the first pin older than Since relies on that
	// order, so the listing is not complete.
	ErrListingUnordered = errors.New("pinterest: listing is not newest first")

	// ErrCircuitOpen means a request was not sent because the Client's
	// circuit breaker is open: Pinterest failed too many times in a row
	// (see BreakerConfig). Nothing was sent, so nothing was created. It
	// also matches ErrUnavailable.
	ErrCircuitOpen = fmt.Errorf("pinterest: not sent: Pinterest failed repeatedly, so calls are paused (circuit open): %w", ErrUnavailable)
)

// ScopeError is a grant refused by Exchange for lacking scopes. It
// matches ErrScopesMissing.
type ScopeError struct {
	// Missing are the scopes asked for and not granted, in the order
	// asked; Granted are those Pinterest said it granted.
	Missing, Granted []string
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("%v: missing %s (granted %q)", ErrScopesMissing, strings.Join(e.Missing, ", "), strings.Join(e.Granted, ","))
}

// Is makes a ScopeError match ErrScopesMissing.
func (e *ScopeError) Is(target error) bool { return target == ErrScopesMissing }

// maxMessageBytes bounds the Pinterest message kept in an APIError.
const maxMessageBytes = 512

// APIError is an error answer from Pinterest. Its Error text never contains
// tokens or request headers.
type APIError struct {
	// Op names the request, such as "POST /pins" or "refresh token".
	Op string
	// Status is the HTTP status code.
	Status int
	// Code is the "code" field of Pinterest's JSON error body, 0 when
	// absent.
	Code int
	// Message is Pinterest's "message" (or OAuth "error_description")
	// text, cut to 512 bytes.
	Message string
	// RequestID is the response's x-pinterest-rid header, "" when absent.
	// Quote it to Pinterest support.
	RequestID string

	kind  error // one of the sentinel errors above, or nil
	scope bool  // also matches ErrScopesMissing
}

// Error implements error.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pinterest: %s: HTTP %d", e.Op, e.Status)
	if e.Code != 0 {
		fmt.Fprintf(&b, " code %d", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (rid %s)", e.RequestID)
	}
	return b.String()
}

// Is reports whether target is the sentinel error that classifies e, such
// as ErrImageRejected or ErrReauthRequired, or ErrScopesMissing for a
// token refused for lacking a scope.
func (e *APIError) Is(target error) bool {
	return (e.kind != nil && target == e.kind) || (e.scope && target == ErrScopesMissing)
}

// RateLimitError is Pinterest's 429 answer, or a request the Client held
// back because Pinterest had said it would refuse it (Preempted). It
// matches ErrRateLimited, and also ErrSpamBlocked when Spam is true;
// errors.As reaches the *APIError inside it.
type RateLimitError struct {
	// API is the answer as received; nil when Preempted.
	API *APIError
	// ResetAt is the instant, on the Client's clock, after which a new
	// request may be tried. It is never before the instant the answer was
	// classified.
	ResetAt time.Time
	// Wait is ResetAt minus the instant the answer was classified.
	Wait time.Duration
	// Spam is true when the answer came from Pinterest's spam and abuse
	// defences (see Config.SpamCodes for how that is recognized).
	Spam bool
	// Preempted is true when the request was not sent: an earlier answer
	// for the same kind of request and account (or app) said that
	// Pinterest would refuse it until ResetAt, by x-ratelimit-remaining 0
	// or a 429. Nothing was sent, so nothing was created.
	Preempted bool

	op string // the request held back, when Preempted
}

// Error implements error.
func (e *RateLimitError) Error() string {
	what := "rate limited"
	if e.Spam {
		what = "blocked by spam protection"
	}
	if e.API == nil {
		return fmt.Sprintf("pinterest: %s: not sent: %s for %s (until %s), as Pinterest's rate-limit headers announced",
			e.op, what, e.Wait.Round(time.Second), e.ResetAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("pinterest: %s for %s (until %s): %v",
		what, e.Wait.Round(time.Second), e.ResetAt.UTC().Format(time.RFC3339), e.API)
}

// Is matches ErrRateLimited, and ErrSpamBlocked when e.Spam is true.
func (e *RateLimitError) Is(target error) bool {
	return target == ErrRateLimited || (e.Spam && target == ErrSpamBlocked)
}

// Unwrap returns the *APIError, or nil when Preempted.
func (e *RateLimitError) Unwrap() error {
	if e.API == nil {
		return nil
	}
	return e.API
}

// Pinterest error codes the Client interprets.
const (
	// codeInvalidGrant is the code of Pinterest's OAuth answer "The
	// authorization grant is invalid".
	codeInvalidGrant = 283
	// codeInsufficientScope is the code of Pinterest's 401 to a token
	// that lacks a scope the call needs.
	codeInsufficientScope = 3
	// codeImageFetchFailed and codeImageInvalid are taken as Pinterest's
	// answers to an image it could not fetch and to an invalid image.
	// Assumption: these two codes are not in Pinterest's published OpenAPI
	// description; they come from observed 403 answers to POST /pins.
	codeImageFetchFailed = 233
	codeImageInvalid     = 235
)

func isImageRejection(status, code int) bool {
	return status == 403 && (code == codeImageFetchFailed || code == codeImageInvalid)
}

func isInvalidGrant(status, code int, oauthError string) bool {
	return (status == 400 || status == 401) && (code == codeInvalidGrant || oauthError == "invalid_grant")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
