package pinteresttest

import (
	"crypto/rand"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// tokenAnswer is the token endpoint's success answer.
type tokenAnswer struct {
	AccessToken           string `json:"access_token"`
	RefreshToken          string `json:"refresh_token"`
	ResponseType          string `json:"response_type"`
	TokenType             string `json:"token_type"`
	ExpiresIn             int64  `json:"expires_in"`
	RefreshTokenExpiresIn int64  `json:"refresh_token_expires_in"`
	RefreshTokenExpiresAt int64  `json:"refresh_token_expires_at"`
	Scope                 string `json:"scope"`
}

const invalidGrantMessage = "The authorization grant is invalid"

// authorize serves the authorization page: it grants the signed-in account
// at once and redirects to redirect_uri with a code and the state.
func (s *Server) authorize(r *http.Request) result {
	q := r.URL.Query()
	if q.Get("client_id") != s.clientID {
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "Invalid client_id.")
	}
	if q.Get("response_type") != "code" {
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "response_type must be code.")
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || (redirect.Scheme != "http" && redirect.Scheme != "https") || redirect.Host == "" {
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "Invalid redirect_uri.")
	}
	var asked []string
	for sc := range strings.SplitSeq(q.Get("scope"), ",") {
		if sc != "" {
			asked = append(asked, sc)
		}
	}
	if len(asked) == 0 {
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "scope is required.")
	}

	s.mu.Lock()
	scopes := []string{}
	for _, sc := range asked {
		if s.grantable == nil || slices.Contains(s.grantable, sc) {
			scopes = append(scopes, sc)
		}
	}
	acct := s.loggedIn
	if acct == "" && len(s.order) > 0 {
		acct = s.order[0]
	}
	if _, ok := s.accounts[acct]; !ok {
		s.mu.Unlock()
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "No account is signed in.")
	}
	code := rand.Text()
	s.codes[code] = &authCode{account: acct, redirectURI: redirect.String(), scopes: scopes}
	s.mu.Unlock()

	rq := redirect.Query()
	rq.Set("code", code)
	if st := q.Get("state"); st != "" {
		rq.Set("state", st)
	}
	redirect.RawQuery = rq.Encode()
	h := http.Header{}
	h.Set("Location", redirect.String())
	return result{status: http.StatusFound, header: h}
}

// token serves the token endpoint: authorization_code and refresh_token
// grants with HTTP Basic client authentication. Refresh tokens rotate: the
// one presented is invalid from then on, whatever happens to the answer.
func (s *Server) token(r *http.Request) result {
	r.Body = http.MaxBytesReader(nil, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "Invalid form body.")
	}
	if !s.clientAuthOK(r) {
		return errorResult(http.StatusUnauthorized, CodeAuthenticationFailed, "Authentication failed.")
	}
	form := r.PostForm
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var (
		acct   string
		scopes []string
		kind   string
	)
	switch form.Get("grant_type") {
	case "authorization_code":
		c, ok := s.codes[form.Get("code")]
		if !ok {
			return errorResult(http.StatusBadRequest, CodeInvalidGrant, invalidGrantMessage)
		}
		delete(s.codes, form.Get("code"))
		if form.Get("redirect_uri") == "" || (c.redirectURI != "" && c.redirectURI != form.Get("redirect_uri")) {
			return errorResult(http.StatusBadRequest, CodeInvalidGrant, invalidGrantMessage)
		}
		acct, scopes, kind = c.account, c.scopes, "authorization_code"
	case "refresh_token":
		rt := form.Get("refresh_token")
		g, ok := s.refresh[rt]
		if !ok {
			return errorResult(http.StatusBadRequest, CodeInvalidGrant, invalidGrantMessage)
		}
		delete(s.refresh, rt)
		if !now.Before(g.expires) {
			return errorResult(http.StatusBadRequest, CodeInvalidGrant, invalidGrantMessage)
		}
		acct, scopes, kind = g.account, g.scopes, "refresh_token"
	default:
		return errorResult(http.StatusBadRequest, CodeInvalidParameters, "Unsupported grant_type.")
	}
	at, rt, _ := s.issueLocked(acct, scopes)
	return result{status: http.StatusOK, account: acct, body: tokenAnswer{
		AccessToken:           at,
		RefreshToken:          rt,
		ResponseType:          kind,
		TokenType:             "bearer",
		ExpiresIn:             int64(s.accessTTL / time.Second),
		RefreshTokenExpiresIn: int64(s.refreshTTL / time.Second),
		RefreshTokenExpiresAt: now.Add(s.refreshTTL).Unix(),
		Scope:                 strings.Join(scopes, ","),
	}}
}

// clientAuthOK checks HTTP Basic client authentication. Per RFC 6749
// section 2.3.1 the id and secret are form-encoded before Basic encoding.
func (s *Server) clientAuthOK(r *http.Request) bool {
	id, secret, ok := r.BasicAuth()
	if !ok {
		return false
	}
	if v, err := url.QueryUnescape(id); err == nil {
		id = v
	}
	if v, err := url.QueryUnescape(secret); err == nil {
		secret = v
	}
	return id == s.clientID && secret == s.clientSecret
}

// issueLocked mints a token pair for acct. s.mu is held.
func (s *Server) issueLocked(acct string, scopes []string) (access, refresh string, expiry time.Time) {
	now := s.now()
	access = "pina_" + rand.Text()
	refresh = "pinr_" + rand.Text()
	expiry = now.Add(s.accessTTL)
	sc := slices.Clone(scopes)
	s.access[access] = &grant{account: acct, scopes: sc, expires: expiry}
	s.refresh[refresh] = &grant{account: acct, scopes: sc, expires: now.Add(s.refreshTTL)}
	return access, refresh, expiry
}

func bearer(r *http.Request) (string, bool) {
	return strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// bearerAccountLocked names the account of the request's access token,
// valid or not, for the request record. s.mu is held.
func (s *Server) bearerAccountLocked(r *http.Request) string {
	if tok, ok := bearer(r); ok {
		if g, ok := s.access[tok]; ok {
			return g.account
		}
	}
	return ""
}

// authenticate checks the request's access token and that it carries
// every one of scopes. It returns the account id, or the error answer.
func (s *Server) authenticate(r *http.Request, scopes ...string) (string, *result) {
	tok, _ := bearer(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.access[tok]
	if !ok || tok == "" || !s.now().Before(g.expires) {
		res := errorResult(http.StatusUnauthorized, CodeAuthenticationFailed, "Authentication failed.")
		return "", &res
	}
	if slices.ContainsFunc(scopes, func(sc string) bool { return !slices.Contains(g.scopes, sc) }) {
		// Pinterest answers 401 with code 3 (not 403) to a token that
		// lacks a scope.
		res := errorResult(http.StatusUnauthorized, CodeInsufficientScope,
			"Your token does not have sufficient permissions to perform this operation. Please ensure your token is authorized with the correct set of scopes.")
		return "", &res
	}
	return g.account, nil
}
