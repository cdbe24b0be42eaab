package discordtest

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/disgoorg/snowflake/v2"
)

// Discord's OAuth2, as the stand-in serves it: the authorization page at
// the site's root (https://discord.com/oauth2/authorize), the token
// endpoint under the API (POST /api/v10/oauth2/token), and GET
// /api/v10/users/@me with the Bearer access token it issues.
const (
	// OAuth2AuthorizePath is the authorization page's path, relative to
	// URL (not APIURL), as on discord.com.
	OAuth2AuthorizePath = "/oauth2/authorize"
	// RouteOAuth2Token is the token endpoint, in the form Inject takes.
	RouteOAuth2Token = "POST /oauth2/token"

	// OAuth2CodeLifetime is how long an authorization code can be
	// exchanged.
	OAuth2CodeLifetime = 10 * time.Minute
	// OAuth2TokenLifetime is the expires_in of the access tokens issued:
	// 604800 s, a week, as Discord's.
	OAuth2TokenLifetime = 7 * 24 * time.Hour
)

// oauth2Scopes are the scopes the authorization page accepts. A request
// for any other gets error=invalid_scope, as on Discord.
var oauth2Scopes = []string{"identify", "email", "guilds", "guilds.members.read", "connections", "openid"}

// oauth2State is the stand-in's OAuth2 bookkeeping, guarded by Server.mu.
type oauth2State struct {
	secret    string
	redirects []string
	user      snowflake.ID // who the authorization page signs in as
	deny      bool         // the user clicks Cancel
	codes     map[string]*oauth2Grant
	access    map[string]*oauth2Grant
	refresh   map[string]*oauth2Grant
	// granted counts the authorization page's approvals.
	granted int
}

// oauth2Grant is a code or token and what it grants.
type oauth2Grant struct {
	user        snowflake.ID
	scopes      []string
	redirectURI string
	expires     time.Time
}

// oauthLocked returns the OAuth2 state, making it on first use. The
// caller holds s.mu.
func (s *Server) oauthLocked() *oauth2State {
	o := &s.oauth2
	if o.codes == nil {
		o.secret = randomHex(16)
		o.codes = map[string]*oauth2Grant{}
		o.access = map[string]*oauth2Grant{}
		o.refresh = map[string]*oauth2Grant{}
	}
	return o
}

// OAuth2AuthorizeURL returns the address of the authorization page,
// http://127.0.0.1:port/oauth2/authorize.
func (s *Server) OAuth2AuthorizeURL() string { return s.baseURL + OAuth2AuthorizePath }

// OAuth2ClientID returns the application's OAuth2 client id: its
// application ID, as on Discord.
func (s *Server) OAuth2ClientID() string { return s.cfg.applicationID.String() }

// OAuth2ClientSecret returns the application's OAuth2 client secret.
func (s *Server) OAuth2ClientSecret() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oauthLocked().secret
}

// AddOAuth2Redirect registers redirect URIs of the application: the
// authorization page sends users only to these, compared exactly, as
// Discord does.
func (s *Server) AddOAuth2Redirect(uris ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.oauthLocked()
	o.redirects = append(o.redirects, uris...)
}

// SetOAuth2User makes the authorization page act as the browser of the
// user userID, signed in to Discord: it approves every request at once
// and redirects with a code for that user. The user must be known (see
// AddMember). Until it is called the page answers that nobody is signed
// in.
func (s *Server) SetOAuth2User(userID snowflake.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[userID]; !ok {
		return ErrUnknownMember
	}
	o := s.oauthLocked()
	o.user, o.deny = userID, false
	return nil
}

// DenyOAuth2 makes the authorization page act as a user who clicks
// Cancel: it redirects with error=access_denied.
func (s *Server) DenyOAuth2() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauthLocked().deny = true
}

// OAuth2Approvals returns how many authorization requests the page has
// approved.
func (s *Server) OAuth2Approvals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oauthLocked().granted
}

// serveAuthorize serves the authorization page. Requests Discord shows
// an error page for (unknown client, redirect URI not registered) get a
// 400 page here; the others redirect to redirect_uri with code and state,
// or with error and error_description.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "405: Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.oauthLocked()
	if q.Get("client_id") != s.OAuth2ClientID() {
		http.Error(w, "Unknown Application", http.StatusBadRequest)
		return
	}
	redirect := q.Get("redirect_uri")
	ru, err := url.Parse(redirect)
	if err != nil || redirect == "" || !slices.Contains(o.redirects, redirect) {
		http.Error(w, "Invalid OAuth2 redirect_uri", http.StatusBadRequest)
		return
	}
	back := func(params url.Values) {
		if st := q.Get("state"); st != "" {
			params.Set("state", st)
		}
		rq := ru.Query()
		for k, vs := range params {
			rq[k] = vs
		}
		ru.RawQuery = rq.Encode()
		http.Redirect(w, r, ru.String(), http.StatusFound)
	}
	if q.Get("response_type") != "code" {
		back(url.Values{"error": {"unsupported_response_type"},
			"error_description": {"The authorization server does not support obtaining an authorization code using this method."}})
		return
	}
	scopes := strings.Fields(q.Get("scope"))
	if len(scopes) == 0 {
		back(url.Values{"error": {"invalid_scope"}, "error_description": {"The requested scope is invalid, unknown, or malformed."}})
		return
	}
	for _, sc := range scopes {
		if !slices.Contains(oauth2Scopes, sc) {
			back(url.Values{"error": {"invalid_scope"}, "error_description": {"The requested scope is invalid, unknown, or malformed."}})
			return
		}
	}
	if o.user == 0 {
		http.Error(w, "Nobody is signed in to Discord in this browser (discordtest: call SetOAuth2User)", http.StatusUnauthorized)
		return
	}
	if o.deny {
		back(url.Values{"error": {"access_denied"},
			"error_description": {"The resource owner or authorization server denied the request"}})
		return
	}
	code := randomHex(15)
	o.codes[code] = &oauth2Grant{user: o.user, scopes: scopes, redirectURI: redirect, expires: s.cfg.clock().Add(OAuth2CodeLifetime)}
	o.granted++
	s.notifyLocked()
	back(url.Values{"code": {code}})
}

// oauth2Error is the body of a token endpoint error, as RFC 6749 and
// Discord write it.
type oauth2Error struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// oauth2Token is the token endpoint's answer.
type oauth2Token struct {
	TokenType    string `json:"token_type"`
	AccessToken  string `json:"access_token"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// handleOAuth2Token serves POST /oauth2/token: the authorization_code and
// refresh_token grants, with the client's credentials in HTTP Basic
// authentication or in the form. Codes and refresh tokens work once. The
// caller holds s.mu.
func (s *Server) handleOAuth2Token(rq *restRequest) restResponse {
	o := s.oauthLocked()
	form, err := url.ParseQuery(string(rq.body))
	if err != nil || !strings.HasPrefix(rq.r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return restResponse{status: http.StatusBadRequest, body: oauth2Error{Error: "invalid_request"}}
	}
	id, secret, basic := rq.r.BasicAuth()
	if !basic {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	if id != s.OAuth2ClientID() || subtle.ConstantTimeCompare([]byte(secret), []byte(o.secret)) != 1 {
		return restResponse{status: http.StatusUnauthorized, body: oauth2Error{Error: "invalid_client"}}
	}
	var g *oauth2Grant
	switch form.Get("grant_type") {
	case "authorization_code":
		code := form.Get("code")
		c, ok := o.codes[code]
		delete(o.codes, code)
		if !ok || !rq.now.Before(c.expires) {
			return restResponse{status: http.StatusBadRequest,
				body: oauth2Error{Error: "invalid_grant", Description: `Invalid "code" in request.`}}
		}
		if form.Get("redirect_uri") != c.redirectURI {
			return restResponse{status: http.StatusBadRequest,
				body: oauth2Error{Error: "invalid_grant", Description: `Invalid "redirect_uri" in request.`}}
		}
		g = c
	case "refresh_token":
		rt := form.Get("refresh_token")
		r, ok := o.refresh[rt]
		delete(o.refresh, rt)
		if !ok {
			return restResponse{status: http.StatusBadRequest, body: oauth2Error{Error: "invalid_grant"}}
		}
		g = r
	case "":
		return restResponse{status: http.StatusBadRequest, body: oauth2Error{Error: "invalid_request"}}
	default:
		return restResponse{status: http.StatusBadRequest, body: oauth2Error{Error: "unsupported_grant_type"}}
	}
	access, refresh := randomHex(15), randomHex(15)
	o.access[access] = &oauth2Grant{user: g.user, scopes: g.scopes, expires: rq.now.Add(OAuth2TokenLifetime)}
	o.refresh[refresh] = &oauth2Grant{user: g.user, scopes: g.scopes}
	return okJSON(oauth2Token{
		TokenType:    "Bearer",
		AccessToken:  access,
		ExpiresIn:    int64(OAuth2TokenLifetime / time.Second),
		RefreshToken: refresh,
		Scope:        strings.Join(g.scopes, " "),
	})
}

// authorized reports whether a request may use a route that needs
// authorization: with the bot token, or on GET /users/@me with an OAuth2
// access token granting identify.
func (s *Server) authorized(rt *route, r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if h == "Bot "+s.cfg.token {
		return true
	}
	if rt.pattern.raw != RouteGetCurrentUser {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.bearerUserLocked(r)
	return ok
}

// bearerUserLocked returns the user of the request's OAuth2 access
// token, when it is valid and grants identify. The caller holds s.mu.
func (s *Server) bearerUserLocked(r *http.Request) (*userInfo, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, false
	}
	g, ok := s.oauthLocked().access[tok]
	if !ok || !s.cfg.clock().Before(g.expires) || !slices.Contains(g.scopes, "identify") {
		return nil, false
	}
	u, ok := s.users[g.user]
	return u, ok
}

// oauth2Me answers GET /users/@me for an OAuth2 access token: the user
// object, with email and verified only under the email scope (which the
// stand-in answers with null and false). The caller holds s.mu.
func oauth2Me(u *userInfo) restResponse {
	return okJSON(wireSelfUser{wireUser: u.wire()})
}
