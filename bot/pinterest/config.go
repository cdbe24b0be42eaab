package pinterest

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Base addresses of Pinterest's API and authorization page.
const (
	// DefaultAPIBase is the production API, version 5.
	DefaultAPIBase = "https://api.pinterest.com/v5"
	// SandboxAPIBase is Pinterest's sandbox API, version 5.
	SandboxAPIBase = "https://api-sandbox.pinterest.com/v5"
	// DefaultAuthURL is the page where a user grants the app access.
	DefaultAuthURL = "https://www.pinterest.com/oauth/"
)

// Scopes of Pinterest's API v5 that the bot asks for. Pinterest expects
// them comma-separated.
const (
	ScopeBoardsRead       = "boards:read"
	ScopeBoardsWrite      = "boards:write"
	ScopePinsRead         = "pins:read"
	ScopePinsWrite        = "pins:write"
	ScopeUserAccountsRead = "user_accounts:read"
)

// RequiredScopes returns the scopes that the operations the bot calls
// require, as the security of each says in Pinterest's OpenAPI
// description of API v5: POST /pins (pins/create) boards:read,
// boards:write, pins:read and pins:write; GET /pins (pins/list) and GET
// /boards/{board_id}/pins (boards/list_pins) boards:read and pins:read;
// GET /boards (boards/list) boards:read; GET /user_account
// (user_account/get) user_accounts:read. The token endpoint
// (oauth/token) takes the app's credentials and no scope.
func RequiredScopes() []string {
	return []string{ScopeBoardsRead, ScopeBoardsWrite, ScopePinsRead, ScopePinsWrite, ScopeUserAccountsRead}
}

// Defaults applied by New to zero fields of Config.
const (
	DefaultRequestTimeout   = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	DefaultExpirySkew       = time.Minute
	DefaultRateLimitWait    = 5 * time.Minute
	DefaultSpamWait         = time.Hour
	DefaultMaxBoardPages    = 40
	DefaultMaxPinPages      = 10
	// MaxRateLimitWait caps the wait taken from a 429 answer's headers, so
	// that a garbage header cannot park an account for years.
	MaxRateLimitWait = 24 * time.Hour
)

// Config configures a Client. The zero value of every field except
// ClientID, ClientSecret and RedirectURL selects a default.
type Config struct {
	// ClientID and ClientSecret are the app's credentials, sent with HTTP
	// Basic authentication to the token endpoint.
	ClientID     string
	ClientSecret string
	// RedirectURL is the app's registered redirect URI; Pinterest sends the
	// user back there with the authorization code.
	RedirectURL string

	// APIBase is the API root without a trailing slash; default
	// DefaultAPIBase. The token endpoint is APIBase + "/oauth/token".
	APIBase string
	// AuthURL is the authorization page; default DefaultAuthURL.
	AuthURL string
	// Scopes are requested by AuthCodeURL, and Exchange refuses a grant
	// that lacks any of them (ErrScopesMissing); default RequiredScopes.
	Scopes []string
	// ContinuousRefresh adds continuous_refresh=true to the code exchange.
	// Pinterest asks apps created before 25 September 2025 to send it so
	// that refresh tokens rotate and never hit a hard expiry; later apps
	// get that behaviour without it.
	ContinuousRefresh bool

	// HTTPClient sends the requests; default a client with no overall
	// timeout (RequestTimeout bounds each request). Its Transport is
	// wrapped, not modified.
	HTTPClient *http.Client
	// RequestTimeout bounds each HTTP request, body included; default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxResponseBytes caps the response body read; a longer body is an
	// error. Default DefaultMaxResponseBytes (1 MiB).
	MaxResponseBytes int64
	// ExpirySkew is how long before its expiry an access token is
	// refreshed; default DefaultExpirySkew.
	ExpirySkew time.Duration
	// RateLimitWait is the wait assumed for a 429 whose headers give no
	// usable reset time; default DefaultRateLimitWait.
	RateLimitWait time.Duration
	// SpamWait is the same for a spam block; default DefaultSpamWait.
	SpamWait time.Duration
	// SpamCodes are Pinterest error codes that mark a 429 as a spam block,
	// in addition to a message mentioning spam. Default none. Pinterest's
	// OpenAPI description documents code 8 as its ordinary rate-limit
	// code, so 8 must not be listed here.
	SpamCodes []int
	// MaxBoardPages bounds the pages ListBoards fetches; default
	// DefaultMaxBoardPages (at 250 boards a page).
	MaxBoardPages int
	// MaxPinPages bounds the pages ListPins fetches when its
	// ListOptions.MaxPages is 0; default DefaultMaxPinPages.
	MaxPinPages int

	// Logger receives debug lines for every response (with its
	// x-pinterest-rid) and warnings for failures, tagged
	// component=pinterest. Tokens, codes and secrets are never logged. The
	// zero value logs nothing.
	Logger zerolog.Logger
	// Now is the clock used for token expiry, rate-limit resets and the
	// circuit breaker's open period; default time.Now.
	Now func() time.Time

	// Retry says how requests that are safe to repeat are repeated.
	Retry RetryConfig
	// Breaker configures the circuit breaker every request goes through.
	Breaker BreakerConfig
	// AppRateLimits says that Pinterest counts this app's requests per
	// app rather than per user (Trial access: so many requests a day per
	// app), so that an answer's x-ratelimit-* headers hold back the
	// requests of every account rather than of the answer's own. Token
	// requests, which carry no user, always count for the app.
	AppRateLimits bool
}

// Validate reports the first problem with c, naming the field.
func (c Config) Validate() error {
	switch {
	case c.ClientID == "":
		return errors.New("pinterest: Config.ClientID is empty")
	case c.ClientSecret == "":
		return errors.New("pinterest: Config.ClientSecret is empty")
	case c.RedirectURL == "":
		return errors.New("pinterest: Config.RedirectURL is empty")
	}
	if err := checkURL("RedirectURL", c.RedirectURL); err != nil {
		return err
	}
	if c.APIBase != "" {
		if err := checkURL("APIBase", c.APIBase); err != nil {
			return err
		}
	}
	if c.AuthURL != "" {
		if err := checkURL("AuthURL", c.AuthURL); err != nil {
			return err
		}
	}
	for _, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, ", ") {
			return fmt.Errorf("pinterest: Config.Scopes has invalid scope %q", s)
		}
	}
	switch {
	case c.RequestTimeout < 0:
		return errors.New("pinterest: Config.RequestTimeout is negative")
	case c.MaxResponseBytes < 0:
		return errors.New("pinterest: Config.MaxResponseBytes is negative")
	case c.ExpirySkew < 0:
		return errors.New("pinterest: Config.ExpirySkew is negative")
	case c.RateLimitWait < 0:
		return errors.New("pinterest: Config.RateLimitWait is negative")
	case c.SpamWait < 0:
		return errors.New("pinterest: Config.SpamWait is negative")
	case c.MaxBoardPages < 0:
		return errors.New("pinterest: Config.MaxBoardPages is negative")
	case c.MaxPinPages < 0:
		return errors.New("pinterest: Config.MaxPinPages is negative")
	}
	if err := c.Retry.validate(); err != nil {
		return err
	}
	return c.Breaker.validate()
}

func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("pinterest: Config.%s %q is not an absolute http(s) URL", field, raw)
	}
	return nil
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.APIBase == "" {
		c.APIBase = DefaultAPIBase
	}
	c.APIBase = strings.TrimRight(c.APIBase, "/")
	if c.AuthURL == "" {
		c.AuthURL = DefaultAuthURL
	}
	if len(c.Scopes) == 0 {
		c.Scopes = RequiredScopes()
	} else {
		c.Scopes = append([]string(nil), c.Scopes...)
	}
	c.SpamCodes = append([]int(nil), c.SpamCodes...)
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.ExpirySkew == 0 {
		c.ExpirySkew = DefaultExpirySkew
	}
	if c.RateLimitWait == 0 {
		c.RateLimitWait = DefaultRateLimitWait
	}
	if c.SpamWait == 0 {
		c.SpamWait = DefaultSpamWait
	}
	if c.MaxBoardPages == 0 {
		c.MaxBoardPages = DefaultMaxBoardPages
	}
	if c.MaxPinPages == 0 {
		c.MaxPinPages = DefaultMaxPinPages
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Retry = c.Retry.withDefaults()
	c.Breaker = c.Breaker.withDefaults()
	return c
}
