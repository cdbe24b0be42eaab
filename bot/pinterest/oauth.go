package pinterest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// AuthCodeURL returns the address of Pinterest's authorization page that
// asks the user to grant Config.Scopes (sent comma-separated, as Pinterest
// expects) and sends them back to Config.RedirectURL with a code and state.
// state must be unguessable and checked by the caller on the way back.
func (c *Client) AuthCodeURL(state string) string {
	return c.oauth.AuthCodeURL(state, oauth2.SetAuthURLParam("scope", strings.Join(c.cfg.Scopes, ",")))
}

// Exchange trades the authorization code from the redirect for the
// account's first token, using HTTP Basic client authentication. The
// caller persists the token and builds a Session from it. An invalid or
// already used code fails with ErrReauthRequired. A grant that lacks any
// of Config.Scopes fails with a *ScopeError (ErrScopesMissing), and its
// token is dropped: the bot's calls would fail with it.
func (c *Client) Exchange(ctx context.Context, code string) (*oauth2.Token, error) {
	if code == "" {
		return nil, errors.New("pinterest: exchange code: code is empty")
	}
	var opts []oauth2.AuthCodeOption
	if c.cfg.ContinuousRefresh {
		opts = append(opts, oauth2.SetAuthURLParam("continuous_refresh", "true"))
	}
	tok, err := c.tokenCall(ctx, ctx, "exchange code", code, func(tctx context.Context) (*oauth2.Token, error) {
		return c.oauth.Exchange(tctx, code, opts...)
	})
	if err != nil {
		return nil, err
	}
	granted, said := GrantedScopes(tok)
	if !said {
		// RFC 6749, section 5.1: an answer without scope grants the
		// scopes asked for.
		return tok, nil
	}
	var missing []string
	for _, s := range c.cfg.Scopes {
		if !slices.Contains(granted, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		c.logger(ctx).Warn().Strs("missing_scopes", missing).Strs("granted_scopes", granted).
			Msg("pinterest granted fewer scopes than asked; token dropped")
		return nil, &ScopeError{Missing: missing, Granted: granted}
	}
	return tok, nil
}

// GrantedScopes returns the scopes a token answer says it grants (its
// scope field, comma- or space-separated), and whether it said: an answer
// without scope grants what was asked.
func GrantedScopes(tok *oauth2.Token) ([]string, bool) {
	raw, ok := tok.Extra("scope").(string)
	if !ok {
		return nil, false
	}
	granted := []string{}
	for _, s := range strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == ' ' }) {
		if !slices.Contains(granted, s) {
			granted = append(granted, s)
		}
	}
	return granted, true
}

// refresh trades refreshToken for a new token. Pinterest rotates refresh
// tokens, so refreshToken is dead once this has reached Pinterest, whatever
// the outcome seen here. Waits before a repeat end with wait.
func (c *Client) refresh(ctx, wait context.Context, refreshToken string) (*oauth2.Token, error) {
	return c.tokenCall(ctx, wait, "refresh token", refreshToken, func(tctx context.Context) (*oauth2.Token, error) {
		return c.oauth.TokenSource(tctx, &oauth2.Token{RefreshToken: refreshToken}).Token()
	})
}

// tokenCall performs a token request for op with fetch, held back while
// the app's token requests are paused by Pinterest's rate limit. It is
// repeated, with backoff, only after a failure to connect: then nothing
// reached Pinterest, so a refresh token is still unused and a code
// unspent. Any other failure may have reached Pinterest and is not
// repeated. Waits before a repeat end with wait, and a repeat is made
// only if it fits before ctx's send deadline (see WithSendDeadline).
// grant is the code or refresh token sent, cut out of error messages.
func (c *Client) tokenCall(ctx, wait context.Context, op, grant string, fetch func(context.Context) (*oauth2.Token, error)) (*oauth2.Token, error) {
	for attempt := 1; ; attempt++ {
		if err := c.admit(ctx, &c.appPauses, opToken, false); err != nil {
			return nil, err
		}
		tok, err := c.tokenOnce(ctx, op, grant, fetch)
		if err == nil || !isDialError(err) || !c.retry(wait, op, attempt, 0) {
			return tok, err
		}
	}
}

// tokenOnce performs one token request through the circuit breaker and
// reads its answer's rate-limit headers.
func (c *Client) tokenOnce(ctx context.Context, op, grant string, fetch func(context.Context) (*oauth2.Token, error)) (*oauth2.Token, error) {
	done, err := c.breaker.allow()
	if err != nil {
		c.logger(ctx).Warn().Str("op", op).Msg("pinterest token request not sent: circuit open")
		return nil, fmt.Errorf("%w: %s", err, op)
	}
	sink := &headerSink{}
	tctx, cancel := c.tokenContext(context.WithValue(ctx, headerSinkKey{}, sink))
	defer cancel()
	tok, err := fetch(tctx)
	var re *oauth2.RetrieveError
	switch {
	case err == nil:
		done(nil)
	case errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500:
		done(nil) // Pinterest answered
	case ctx.Err() != nil:
		done(errBreakerExcluded)
	default:
		done(errBreakerFailure)
	}
	if err != nil {
		return nil, c.tokenError(ctx, op, grant, err)
	}
	c.observe(ctx, &c.appPauses, opToken, sink.header())
	return c.stamp(tok), nil
}

// tokenContext bounds a token request by RequestTimeout and routes it
// through the Client's logging HTTP client.
func (c *Client) tokenContext(ctx context.Context) (context.Context, context.CancelFunc) {
	tctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	return context.WithValue(tctx, oauth2.HTTPClient, c.http), cancel
}

// stamp sets tok.Expiry from expires_in on the Client's clock, so that
// expiry decisions use one clock.
func (c *Client) stamp(tok *oauth2.Token) *oauth2.Token {
	if tok.ExpiresIn > 0 {
		tok.Expiry = c.cfg.Now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return tok
}

// tokenError classifies a failure of the token endpoint. Pinterest answers
// an unknown, expired, revoked or reused grant with 400 and code 283 ("The
// authorization grant is invalid"); an RFC 6749 error=invalid_grant is
// accepted too. The raw body is never put into the error, and the grant
// sent (a code or refresh token) and the app's secret are cut out of the
// message read from it.
func (c *Client) tokenError(ctx context.Context, op, grant string, err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		c.logger(ctx).Warn().Str("op", op).Err(err).Msg("pinterest token request failed")
		if ctx.Err() != nil {
			return fmt.Errorf("pinterest: %s: %w", op, err)
		}
		return fmt.Errorf("%w: pinterest: %s: %w", ErrUnavailable, op, err)
	}
	ae := &APIError{Op: op}
	header := http.Header{}
	if re.Response != nil {
		ae.Status = re.Response.StatusCode
		header = re.Response.Header
		ae.RequestID = header.Get(ridHeader)
	}
	eb := parseErrorBody(re.Body)
	ae.Code, ae.Message = eb.code, eb.message
	if ae.Message == "" {
		ae.Message = truncate(re.ErrorDescription, maxMessageBytes)
	}
	ae.Message = scrub(ae.Message, grant, c.cfg.ClientSecret)
	c.observe(ctx, &c.appPauses, opToken, header)
	oauthErr := re.ErrorCode
	if oauthErr == "" {
		oauthErr = eb.oauthError
	}
	switch {
	case ae.Status == http.StatusTooManyRequests:
		rl := c.rateLimited(ctx, ae, header)
		c.appPauses.set(opToken, pause{until: rl.ResetAt, spam: rl.Spam})
		return rl
	case isInvalidGrant(ae.Status, ae.Code, oauthErr):
		ae.kind = ErrReauthRequired
	case ae.Status >= 500:
		ae.kind = ErrUnavailable
	}
	c.logger(ctx).Warn().Str("op", op).Int("status", ae.Status).Int("code", ae.Code).
		Str("rid", ae.RequestID).Msg("pinterest token request rejected")
	return ae
}

// accessToken returns an access token for a request on s, refreshing the
// grant when needed. rejected, when not "", is an access token Pinterest
// has just answered 401 to: if another goroutine has already replaced it
// that token is returned, else the grant is refreshed even though the
// token has not expired by the clock.
//
// Once a refresh request has left, Pinterest has rotated the grant and the
// old refresh token is dead, whatever becomes of the answer. So the refresh
// and the saving of its result run to the end on a goroutine of their own,
// each bounded by Config.RequestTimeout but not by ctx: a caller that stops
// waiting (autocomplete's deadline, a shutdown, a reservation's deadline)
// gets ctx's error, and the new token is saved all the same. A refresh
// starts only within ctx's send deadline (WithSendDeadline). Wait waits
// for such refreshes.
func (c *Client) accessToken(ctx context.Context, s *Session, rejected string) (string, error) {
	if tok, ok := c.usable(s, rejected); ok {
		return tok, nil
	}
	select {
	case s.refreshing <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("pinterest: waiting for token refresh: %w", ctx.Err())
	}
	type result struct {
		tok string
		err error
	}
	done := make(chan result, 1)
	c.refreshes.Add(1)
	go func() {
		defer c.refreshes.Done()
		defer func() { <-s.refreshing }()
		tok, err := c.renew(context.WithoutCancel(ctx), ctx, s, rejected)
		done <- result{tok, err}
	}()
	select {
	case r := <-done:
		return r.tok, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("pinterest: waiting for token refresh: %w", ctx.Err())
	}
}

// Wait waits until every token refresh in flight has ended, its new token
// saved or its failure recorded, or until ctx ends. Each refresh is
// bounded by Config.RequestTimeout. Close the token store only after Wait.
func (c *Client) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		c.refreshes.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pinterest: waiting for token refreshes: %w", ctx.Err())
	}
}

// renew makes s's token usable: it saves a refreshed token not saved yet,
// else refreshes the grant when the current token cannot be used. The
// caller holds s.refreshing. Waits before repeating a refresh that
// never connected end with wait, the caller's context.
func (c *Client) renew(ctx, wait context.Context, s *Session, rejected string) (string, error) {
	s.mu.Lock()
	reauth, pending, cur := s.reauth, s.pending, s.tok
	s.mu.Unlock()
	if reauth {
		return "", ErrReauthRequired
	}
	if pending != nil {
		if err := c.persist(ctx, s, pending); err != nil {
			return "", err
		}
		cur = pending
	}
	if c.valid(cur, rejected) {
		return cur.AccessToken, nil
	}
	if cur.RefreshToken == "" {
		return "", fmt.Errorf("pinterest: access token expired and no refresh token: %w", ErrReauthRequired)
	}
	// Once sent, a refresh runs to its end whatever the caller does (the
	// old refresh token dies with it), so it starts only if it can end
	// within the caller's send deadline.
	if err := c.timeLeft(ctx, "refresh token"); err != nil {
		return "", err
	}
	next, err := c.refresh(ctx, wait, cur.RefreshToken)
	if err != nil {
		if errors.Is(err, ErrReauthRequired) {
			s.mu.Lock()
			s.reauth = true
			s.mu.Unlock()
		}
		return "", err
	}
	s.mu.Lock()
	s.pending = next
	s.mu.Unlock()
	if err := c.persist(ctx, s, next); err != nil {
		return "", err
	}
	return next.AccessToken, nil
}

// persist saves tok through s's TokenSaver and, once that succeeded, makes
// it the session's current token. The caller holds s.refreshing.
func (c *Client) persist(ctx context.Context, s *Session, tok *oauth2.Token) error {
	// The save runs on the refresh's own goroutine, which no caller
	// cancels: bound it like a request, or a stuck store would hold the
	// account's refresh slot for ever.
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	if err := s.save(ctx, copyToken(tok)); err != nil {
		// The saver's error is returned, not logged: its text is the
		// caller's and might carry anything.
		c.logger(ctx).Warn().Msg("pinterest rotated token not saved; it will be offered again")
		return fmt.Errorf("pinterest: saving rotated token: %w", err)
	}
	s.mu.Lock()
	s.tok = tok
	s.pending = nil
	s.mu.Unlock()
	c.logger(ctx).Info().Msg("pinterest token rotated and saved")
	return nil
}

// usable returns s's current access token when it may be used without
// taking the refresh slot.
func (c *Client) usable(s *Session, rejected string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reauth || s.pending != nil || !c.valid(s.tok, rejected) {
		return "", false
	}
	return s.tok.AccessToken, true
}

// valid reports whether t's access token is present, is not rejected, and
// does not expire within ExpirySkew of now. A zero Expiry never expires.
func (c *Client) valid(t *oauth2.Token, rejected string) bool {
	if t.AccessToken == "" || t.AccessToken == rejected {
		return false
	}
	return t.Expiry.IsZero() || c.cfg.Now().Add(c.cfg.ExpirySkew).Before(t.Expiry)
}
