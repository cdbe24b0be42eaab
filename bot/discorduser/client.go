package discorduser

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Discord's addresses, the defaults of Config.
const (
	// DefaultAPIURL is Discord's REST API, version 10.
	DefaultAPIURL = "https://discord.com/api/v10"
	// DefaultAuthorizeURL is Discord's OAuth2 authorization page.
	DefaultAuthorizeURL = "https://discord.com/oauth2/authorize"
	// DefaultCDNURL serves avatars.
	DefaultCDNURL = "https://cdn.discordapp.com"
	// DefaultRequestTimeout bounds one request when
	// Config.RequestTimeout is 0.
	DefaultRequestTimeout = 10 * time.Second
)

// ScopeIdentify is the one scope SignIn asks for: it lets GET /users/@me
// read the user, and nothing else.
const ScopeIdentify = "identify"

// maxResponseBytes bounds the answers read; a user object is a few
// hundred bytes.
const maxResponseBytes = 64 << 10

// userAgent is sent with every request, in the form Discord requires of
// bots.
const userAgent = "DiscordBot (https://github.com/pinbot/pinbot, 1)"

// Errors of User and SignIn; match them with errors.Is.
var (
	// ErrUnknownUser: Discord knows no user with that ID (10013), or the
	// ID is not a Discord ID.
	ErrUnknownUser = errors.New("discorduser: unknown user")
	// ErrUnavailable: Discord did not answer, answered 5xx, or asked to
	// wait (429). Trying again later may work.
	ErrUnavailable = errors.New("discorduser: Discord is unavailable")
	// ErrCodeRejected: Discord did not accept the authorization code
	// (invalid_grant: unknown, used, expired, or issued for another
	// redirect URI), or the access token it gave did not read the user.
	ErrCodeRejected = errors.New("discorduser: Discord rejected the authorization code")
	// ErrSignInDisabled: SignIn or AuthCodeURL without a client secret.
	ErrSignInDisabled = errors.New("discorduser: sign-in with Discord is not configured (no client secret)")
)

// Config configures a Client. Token is required, and RedirectURL when
// ClientSecret is set; the zero value of every other field selects a
// default.
type Config struct {
	// Token is the bot token, which reads users by ID. It is never
	// logged or put in an error.
	Token string
	// APIURL is the REST base without a trailing slash; default
	// DefaultAPIURL. The token endpoint is APIURL + "/oauth2/token".
	APIURL string
	// CDNURL is where AvatarURL points; default DefaultCDNURL.
	CDNURL string

	// ClientSecret is the application's OAuth2 client secret; "" disables
	// SignIn.
	ClientSecret string
	// ClientID is the application's OAuth2 client id; default the
	// application ID the bot token starts with, which is the same.
	ClientID string
	// AuthorizeURL is the authorization page; default
	// DefaultAuthorizeURL.
	AuthorizeURL string
	// RedirectURL is where Discord sends the browser back with the code;
	// it must be one of the application's registered redirects.
	RedirectURL string

	// HTTPClient sends the requests; default a new http.Client.
	HTTPClient *http.Client
	// RequestTimeout bounds each request; default DefaultRequestTimeout.
	RequestTimeout time.Duration
}

// Validate reports the first problem with c, naming the field. It never
// shows the token or the secret.
func (c Config) Validate() error {
	if c.Token == "" {
		return errors.New("discorduser: Config.Token is empty")
	}
	for _, f := range []struct{ name, v string }{
		{"APIURL", c.APIURL}, {"CDNURL", c.CDNURL}, {"AuthorizeURL", c.AuthorizeURL}, {"RedirectURL", c.RedirectURL},
	} {
		if f.v == "" {
			continue
		}
		if u, err := url.Parse(f.v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("discorduser: Config.%s %q is not an absolute http(s) URL", f.name, f.v)
		}
	}
	if c.ClientSecret != "" {
		if c.RedirectURL == "" {
			return errors.New("discorduser: Config.RedirectURL is empty, and sign-in (Config.ClientSecret) needs it")
		}
		if c.ClientID == "" {
			if _, err := applicationID(c.Token); err != nil {
				return errors.New("discorduser: Config.ClientID is empty and Config.Token does not start with the application ID")
			}
		}
	}
	if c.RequestTimeout < 0 {
		return fmt.Errorf("discorduser: Config.RequestTimeout %v is negative", c.RequestTimeout)
	}
	return nil
}

// Client reads Discord users and signs browsers in; see the package
// documentation. Create it with New.
type Client struct {
	cfg   Config
	oauth *oauth2.Config // nil without a client secret
}

// New returns a Client for cfg, after validating it.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.CDNURL == "" {
		cfg.CDNURL = DefaultCDNURL
	}
	cfg.CDNURL = strings.TrimRight(cfg.CDNURL, "/")
	if cfg.AuthorizeURL == "" {
		cfg.AuthorizeURL = DefaultAuthorizeURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	c := &Client{cfg: cfg}
	if cfg.ClientSecret != "" {
		id := cfg.ClientID
		if id == "" {
			app, _ := applicationID(cfg.Token)
			id = strconv.FormatUint(app, 10)
		}
		c.oauth = &oauth2.Config{
			ClientID:     id,
			ClientSecret: cfg.ClientSecret,
			RedirectURL:  cfg.RedirectURL,
			Scopes:       []string{ScopeIdentify},
			Endpoint: oauth2.Endpoint{
				AuthURL:   cfg.AuthorizeURL,
				TokenURL:  cfg.APIURL + "/oauth2/token",
				AuthStyle: oauth2.AuthStyleInHeader,
			},
		}
	}
	return c, nil
}

// User is a Discord user as the pages show them.
type User struct {
	// ID is the user's snowflake, in decimal.
	ID string
	// Username is the unique name (@name); GlobalName the display name,
	// "" when the user has none.
	Username   string
	GlobalName string
	// Avatar is the avatar's hash, "" for a default avatar.
	Avatar string
}

// Name is what Discord shows for the user: the display name, else the
// username.
func (u User) Name() string {
	if u.GlobalName != "" {
		return u.GlobalName
	}
	return u.Username
}

// userJSON is Discord's user object, the fields read.
type userJSON struct {
	ID         string  `json:"id"`
	Username   string  `json:"username"`
	GlobalName *string `json:"global_name"`
	Avatar     *string `json:"avatar"`
}

func (j userJSON) user() User {
	u := User{ID: j.ID, Username: j.Username}
	if j.GlobalName != nil {
		u.GlobalName = *j.GlobalName
	}
	if j.Avatar != nil {
		u.Avatar = *j.Avatar
	}
	return u
}

// User reads the user id with the bot token (GET /users/{id}).
func (c *Client) User(ctx context.Context, id string) (User, error) {
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return User{}, fmt.Errorf("%w: %q is not a Discord ID", ErrUnknownUser, id)
	}
	u, err := c.get(ctx, "/users/"+id, "Bot "+c.cfg.Token)
	if err != nil {
		return User{}, err
	}
	if u.ID != id {
		return User{}, fmt.Errorf("%w: GET /users/{id} answered another user", ErrUnavailable)
	}
	return u, nil
}

// SignInEnabled reports whether the Client has a client secret, and so
// can sign browsers in.
func (c *Client) SignInEnabled() bool { return c.oauth != nil }

// AuthCodeURL returns the address of Discord's authorization page, asking
// for the identify scope and sending the browser back to
// Config.RedirectURL with a code and state. state must be unguessable and
// checked on the way back. It returns "" when sign-in is disabled.
func (c *Client) AuthCodeURL(state string) string {
	if c.oauth == nil {
		return ""
	}
	return c.oauth.AuthCodeURL(state)
}

// SignIn trades the authorization code from Discord's redirect for an
// access token and reads, with it, the user who signed in (GET
// /users/@me). The token is not kept.
func (c *Client) SignIn(ctx context.Context, code string) (User, error) {
	if c.oauth == nil {
		return User{}, ErrSignInDisabled
	}
	if code == "" {
		return User{}, fmt.Errorf("%w: empty code", ErrCodeRejected)
	}
	tctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	tok, err := c.oauth.Exchange(context.WithValue(tctx, oauth2.HTTPClient, c.cfg.HTTPClient), code)
	if err != nil {
		return User{}, tokenError(ctx, err)
	}
	if tok.AccessToken == "" {
		return User{}, fmt.Errorf("%w: no access token in the answer", ErrCodeRejected)
	}
	u, err := c.get(ctx, "/users/@me", "Bearer "+tok.AccessToken)
	if err != nil {
		var se *statusError
		if errors.As(err, &se) && se.status == http.StatusUnauthorized {
			return User{}, fmt.Errorf("%w: %w", ErrCodeRejected, err)
		}
		return User{}, err
	}
	return u, nil
}

// tokenError classifies a failed code exchange, without the answer's
// body.
func tokenError(ctx context.Context, err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		if ctx.Err() != nil {
			return fmt.Errorf("discorduser: token request: %w", ctx.Err())
		}
		return fmt.Errorf("%w: token request failed", ErrUnavailable)
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	switch {
	case re.ErrorCode == "invalid_grant":
		return fmt.Errorf("%w (%d invalid_grant)", ErrCodeRejected, status)
	case status == http.StatusTooManyRequests || status >= 500:
		return fmt.Errorf("%w: token endpoint answered %d", ErrUnavailable, status)
	}
	// invalid_client and the like: the configuration is wrong.
	return fmt.Errorf("discorduser: token endpoint answered %d %s: check the client id and secret",
		status, strconv.Quote(truncate(re.ErrorCode, 64)))
}

// statusError is a REST answer other than 200.
type statusError struct {
	path   string
	status int
	code   int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("discorduser: GET %s answered %d (code %d)", e.path, e.status, e.code)
}

// get reads a user object at path with the Authorization header auth.
// The path is logged in errors only with the ID replaced.
func (c *Client) get(ctx context.Context, path, auth string) (User, error) {
	shown := "/users/{id}"
	if path == "/users/@me" {
		shown = path
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cfg.APIURL+path, nil)
	if err != nil {
		return User{}, fmt.Errorf("discorduser: GET %s: %w", shown, err)
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("User-Agent", userAgent)
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return User{}, fmt.Errorf("%w: GET %s: %w", ErrUnavailable, shown, ctx.Err())
		}
		return User{}, fmt.Errorf("%w: GET %s failed", ErrUnavailable, shown)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil || len(body) > maxResponseBytes {
		return User{}, fmt.Errorf("%w: GET %s: answer unreadable or too long", ErrUnavailable, shown)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(body, &e)
		se := &statusError{path: shown, status: resp.StatusCode, code: e.Code}
		switch {
		case resp.StatusCode == http.StatusNotFound:
			return User{}, fmt.Errorf("%w: %w", ErrUnknownUser, se)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			return User{}, fmt.Errorf("%w: %w", ErrUnavailable, se)
		}
		return User{}, se
	}
	var j userJSON
	if err := json.Unmarshal(body, &j); err != nil || j.ID == "" {
		return User{}, fmt.Errorf("%w: GET %s: not a user object", ErrUnavailable, shown)
	}
	return j.user(), nil
}

// AvatarURL returns the address of u's avatar on the CDN, 128 pixels
// wide, in PNG: their own, or the default avatar Discord gives users
// without one.
func (c *Client) AvatarURL(u User) string {
	id, err := strconv.ParseUint(u.ID, 10, 64)
	if err != nil {
		return ""
	}
	if u.Avatar != "" && validHash(u.Avatar) {
		return c.cfg.CDNURL + "/avatars/" + u.ID + "/" + u.Avatar + ".png?size=128"
	}
	// Users on the new username system (discriminator 0) get one of six
	// default avatars by their ID.
	return c.cfg.CDNURL + "/embed/avatars/" + strconv.FormatUint((id>>22)%6, 10) + ".png"
}

// validHash reports whether h looks like an avatar hash: a_ for animated
// ones, then hexadecimal.
func validHash(h string) bool {
	h = strings.TrimPrefix(h, "a_")
	if h == "" || len(h) > 64 {
		return false
	}
	for _, r := range h {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// applicationID reads the application ID that starts a bot token.
func applicationID(token string) (uint64, error) {
	first, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(first, "="))
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil || id == 0 {
		return 0, errors.New("not an application ID")
	}
	return id, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
