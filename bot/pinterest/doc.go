// Package pinterest is a client for the parts of Pinterest's API v5 that
// the bot needs: OAuth 2.0 authorization with rotating refresh tokens,
// creating image pins, listing pins and boards, and reading the user
// account.
//
// # Usage
//
// One Client serves every account. Each account is a Session built from
// its stored token and a TokenSaver that persists the token whenever
// Pinterest rotates it:
//
//	c, err := pinterest.New(pinterest.Config{
//		ClientID:     id,
//		ClientSecret: secret,
//		RedirectURL:  "https://bot.example/oauth/callback",
//		Logger:       log,
//	})
//	// Authorization: send the user to c.AuthCodeURL(state), then
//	tok, err := c.Exchange(ctx, codeFromRedirect)
//	// store tok, then
//	s, err := pinterest.NewSession(tok, func(ctx context.Context, t *oauth2.Token) error {
//		return store.SaveToken(ctx, accountID, t)
//	})
//	pin, err := c.CreatePin(ctx, s, pinterest.PinRequest{BoardID: b, ImageURL: u})
//	switch {
//	case errors.Is(err, pinterest.ErrOutcomeUnknown):
//		// The pin may exist: count it, do not retry.
//	case errors.Is(err, pinterest.ErrSpamBlocked), errors.Is(err, pinterest.ErrRateLimited):
//		var rl *pinterest.RateLimitError
//		errors.As(err, &rl) // wait until rl.ResetAt
//	case errors.Is(err, pinterest.ErrImageRejected):
//		// This pin fails; go on with the next.
//	case errors.Is(err, pinterest.ErrReauthRequired):
//		// Ask the user to authorize again.
//	}
//
// # Marks and listings
//
// Pinterest has no idempotency key, and a POST /pins whose answer was
// lost may or may not have made its pin. A PinRequest's Mark, an
// identifier the bot chooses, travels in the pin's link (the query
// parameter MarkParam) and comes back as Pin.Mark, so that ListPins,
// Pinterest's own listing of the account's pins with their creation
// times, tells whether the pin exists and when it was made:
//
//	pin, err := c.CreatePin(ctx, s, pinterest.PinRequest{
//		BoardID: b, ImageURL: u, Link: messageURL, Mark: reservationID,
//	})
//	// ... the answer was lost (ErrOutcomeUnknown); later:
//	pins, err := c.ListPins(ctx, s, pinterest.ListOptions{Since: reservedAt})
//	switch {
//	case err != nil:
//		// Not known: count the pin as possibly made.
//	default:
//		for _, p := range pins {
//			if p.Mark == reservationID {
//				// Made, at p.CreatedAt.
//			}
//		}
//	}
//
// ListPins reads newest first and stops at ListOptions.Since, bounded by
// ListOptions.MaxPages (ErrListingTruncated); it checks that the listing
// keeps its order (ErrListingUnordered). Pinterest may list a pin only a
// while after making it: a mark not found proves nothing until then.
//
// # Tokens
//
// Pinterest's continuous refresh tokens rotate: each refresh returns a new
// refresh token and kills the old one at once. The Client refreshes one
// Session at a time, hands the new token to the TokenSaver, and uses it
// only after the save succeeded. Access tokens are refreshed ahead of their
// expiry (Config.ExpirySkew, on the Config.Now clock) and after a 401.
//
// Exchange refuses a grant whose scope lacks any of Config.Scopes (by
// default RequiredScopes, what the calls the bot makes require) with a
// *ScopeError, and drops its token.
//
// A refresh whose answer is lost (a timeout, a dropped connection) may
// still have rotated the token at Pinterest; the next refresh then fails
// with ErrReauthRequired, and only a new authorization helps.
//
// # Retries
//
// POST /pins is never retried, because Pinterest has no idempotency key;
// only a 401, which Pinterest answers before acting, leads to one repeat
// after a refresh. GET requests are repeated after a 5xx answer, a
// transport error or a 429 whose reset is near, with exponential backoff
// and full jitter (Config.Retry), within the caller's context. A token
// refresh is repeated only when its connection was never made: once it
// reached Pinterest, the refresh token may have rotated.
//
// # Rate limits
//
// Every answer's x-ratelimit-remaining is read. When it says no request
// of that kind is left (or Pinterest answered 429), the next requests of
// that kind for that account (for the app, under Config.AppRateLimits, and
// for token requests) are held back until the reset Pinterest announced:
// a GET waits if the reset is near, anything else fails at once with a
// *RateLimitError whose Preempted is set, having sent nothing.
//
// # Circuit breaker
//
// Consecutive failures (5xx, timeouts, failed connections) open a circuit
// breaker (Config.Breaker): while it is open every request fails at once
// with ErrCircuitOpen, which matches ErrUnavailable, without touching the
// network; after a while one probe goes through. Client.BreakerState and
// Client.BreakerCounts report it, and Config.Breaker.OnStateChange is
// called on every change.
//
// # Logging
//
// Every response is logged at debug level with its x-pinterest-rid, and
// failures at warn level, through the zerolog logger in Config, tagged
// component=pinterest. Tokens, authorization codes, the client secret and
// request headers are never logged.
//
// The pinteresttest package is a stand-in server speaking the same wire
// protocol, for tests and local runs.
package pinterest
