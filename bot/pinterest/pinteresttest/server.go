package pinteresttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Paths the Server answers.
const (
	PathAuthorize   = "/oauth/"
	PathToken       = "/v5/oauth/token"
	PathPins        = "/v5/pins"
	PathBoards      = "/v5/boards"
	PathUserAccount = "/v5/user_account"
	// PathBoardPins stands for the path of any board's pin listing, as
	// WithRateLimit counts them; BoardPinsPath gives one board's.
	PathBoardPins = "/v5/boards/{board_id}/pins"
)

// BoardPinsPath is the path of the listing of boardID's pins.
func BoardPinsPath(boardID string) string { return PathBoards + "/" + boardID + "/pins" }

// boardOfPinsPath returns the board of a pin listing's path, and
// whether path is one.
func boardOfPinsPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, PathBoards+"/")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, "/pins")
	if !ok || id == "" || strings.Contains(id, "/") {
		return "", false
	}
	return id, true
}

// endpoint is the endpoint that a request to path is for, as Pinterest
// counts them: path itself, or PathBoardPins for any board's.
func endpoint(path string) string {
	if _, ok := boardOfPinsPath(path); ok {
		return PathBoardPins
	}
	return path
}

// Scopes granted to tokens issued by AddAccount.
var allScopes = []string{"boards:read", "boards:write", "pins:read", "pins:write", "user_accounts:read"}

// createPinScopes are the scopes POST /v5/pins requires, as its security
// says in Pinterest's OpenAPI description (pins/create); listPinsScopes
// those of the listings (pins/list, boards/list_pins); the other routes
// require one each.
var (
	createPinScopes = []string{"boards:read", "boards:write", "pins:read", "pins:write"}
	listPinsScopes  = []string{"boards:read", "pins:read"}
)

// Server is a stand-in for Pinterest's API v5 and authorization page,
// listening on a loopback address. It keeps accounts, boards, tokens and
// created pins in memory. A Server is safe for simultaneous use by
// multiple goroutines.
type Server struct {
	// URL is the server's root, such as http://127.0.0.1:40123. The API
	// lives under APIBase and the authorization page at AuthURL.
	URL string

	srv       *httptest.Server
	closing   chan struct{}
	closeOnce sync.Once

	clientID     string
	clientSecret string
	now          func() time.Time
	accessTTL    time.Duration
	refreshTTL   time.Duration

	mu       sync.Mutex
	seq      uint64 // request ids
	pinSeq   uint64
	accounts map[string]*account
	order    []string // account ids in the order added
	loggedIn string
	// grantable, when not nil, are the only scopes the authorization
	// page grants (SetGrantedScopes).
	grantable []string
	access    map[string]*grant // access token -> grant
	refresh   map[string]*grant // refresh token -> grant
	codes     map[string]*authCode
	rejects   map[string]int // image URL -> error code
	faults    []*activeFault
	pins      []Pin
	// listingLag and hidden keep pins out of listings for a while (see
	// SetListingLag and HidePin).
	listingLag time.Duration
	hidden     map[string]time.Time // pin id -> listed from
	// pinned is closed, and replaced, whenever a pin is created.
	pinned   chan struct{}
	requests []Request
	// limit, when set, is enforced and announced (see RateLimit); quotas
	// are its windows.
	limit  *RateLimit
	quotas map[quotaKey]*quotaWindow
}

// Option configures a Server.
type Option func(*Server)

// WithClientCredentials sets the app credentials the token endpoint
// accepts; default "pinteresttest-client" and "pinteresttest-secret".
func WithClientCredentials(id, secret string) Option {
	return func(s *Server) { s.clientID, s.clientSecret = id, secret }
}

// WithClock sets the clock used for token expiry and pin creation times;
// default time.Now.
func WithClock(now func() time.Time) Option {
	return func(s *Server) { s.now = now }
}

// WithAccessTokenTTL sets the lifetime of issued access tokens; default 30
// days, as Pinterest's.
func WithAccessTokenTTL(d time.Duration) Option {
	return func(s *Server) { s.accessTTL = d }
}

// WithRefreshTokenTTL sets the lifetime of issued refresh tokens; default
// 60 days, as Pinterest's continuous refresh tokens.
func WithRefreshTokenTTL(d time.Duration) Option {
	return func(s *Server) { s.refreshTTL = d }
}

// NewServer starts a Server. Close it when done.
func NewServer(opts ...Option) *Server {
	s := &Server{
		closing:      make(chan struct{}),
		clientID:     "pinteresttest-client",
		clientSecret: "pinteresttest-secret",
		now:          time.Now,
		accessTTL:    30 * 24 * time.Hour,
		refreshTTL:   60 * 24 * time.Hour,
		accounts:     make(map[string]*account),
		access:       make(map[string]*grant),
		refresh:      make(map[string]*grant),
		codes:        make(map[string]*authCode),
		rejects:      make(map[string]int),
		hidden:       make(map[string]time.Time),
	}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close releases requests held by Delay, Until or Hang faults, unanswered
// and without effect (even Detached ones), then shuts the server down and
// waits for its handlers. Close may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.srv.Close()
	})
}

// APIBase is the API root, for pinterest.Config.APIBase.
func (s *Server) APIBase() string { return s.URL + "/v5" }

// AuthURL is the authorization page, for pinterest.Config.AuthURL.
func (s *Server) AuthURL() string { return s.URL + PathAuthorize }

// ClientID returns the app id the token endpoint accepts.
func (s *Server) ClientID() string { return s.clientID }

// ClientSecret returns the app secret the token endpoint accepts.
func (s *Server) ClientSecret() string { return s.clientSecret }

// Client returns a new HTTP client for the Server; the caller may change
// its fields, such as CheckRedirect.
func (s *Server) Client() *http.Client {
	c := *s.srv.Client()
	return &c
}

// Board is a board of a stand-in account.
type Board struct {
	ID   string
	Name string
	// Privacy is PUBLIC (the default when empty), PROTECTED or SECRET.
	Privacy string
}

type account struct {
	id           string
	username     string
	profileImage string
	boards       []Board
}

func (a *account) hasBoard(id string) bool {
	return slices.ContainsFunc(a.boards, func(b Board) bool { return b.ID == id })
}

type grant struct {
	account string
	scopes  []string
	expires time.Time
}

type authCode struct {
	account     string
	redirectURI string // "" accepts any
	scopes      []string
}

// Credentials are what AddAccount issues for an account.
type Credentials struct {
	AccountID string
	// AccessToken and RefreshToken are a fresh token pair with every
	// scope; Expiry is the access token's expiry on the Server's clock.
	AccessToken  string
	RefreshToken string
	Expiry       time.Time
	// Code is a one-time authorization code for the same account, to
	// exchange with any redirect_uri.
	Code string
}

// Token returns the token pair as an oauth2.Token.
func (c Credentials) Token() *oauth2.Token {
	return &oauth2.Token{
		AccessToken:  c.AccessToken,
		RefreshToken: c.RefreshToken,
		TokenType:    "bearer",
		Expiry:       c.Expiry,
	}
}

// AddAccount adds the account id with username and boards, and issues
// credentials for it. Adding an existing id renames it, appends the boards
// and issues further credentials. The first account added is the one the
// authorization page signs in, until SetLoggedIn says otherwise.
func (s *Server) AddAccount(id, username string, boards ...Board) Credentials {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[id]
	if !ok {
		a = &account{id: id}
		s.accounts[id] = a
		s.order = append(s.order, id)
	}
	a.username = username
	for _, b := range boards {
		if b.Privacy == "" {
			b.Privacy = "PUBLIC"
		}
		a.boards = append(a.boards, b)
	}
	at, rt, exp := s.issueLocked(id, allScopes)
	code := rand.Text()
	s.codes[code] = &authCode{account: id, scopes: allScopes}
	return Credentials{AccountID: id, AccessToken: at, RefreshToken: rt, Expiry: exp, Code: code}
}

// SetLoggedIn makes accountID the user who grants access on the
// authorization page.
func (s *Server) SetLoggedIn(accountID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loggedIn = accountID
}

// SetGrantedScopes makes the authorization page grant, of the scopes a
// request asks for, only those in scopes, as Pinterest does for an app
// not allowed the others; the token answer's scope says which. nil (the
// default) grants every scope asked for.
func (s *Server) SetGrantedScopes(scopes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if scopes == nil {
		s.grantable = nil
		return
	}
	s.grantable = slices.Clone(scopes)
	if s.grantable == nil {
		s.grantable = []string{}
	}
}

// SetProfileImage sets the profile_image GET /v5/user_account answers for
// accountID, an address; "" (the default) answers none.
func (s *Server) SetProfileImage(accountID, imageURL string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.accounts[accountID]; ok {
		a.profileImage = imageURL
	}
}

// ExpireAccessTokens makes every access token of accountID expired, as if
// its lifetime had passed; refresh tokens stay valid.
func (s *Server) ExpireAccessTokens(accountID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, g := range s.access {
		if g.account == accountID {
			delete(s.access, tok)
		}
	}
}

// RevokeGrants invalidates every access and refresh token of accountID, as
// when the user disconnects the app.
func (s *Server) RevokeGrants(accountID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, g := range s.access {
		if g.account == accountID {
			delete(s.access, tok)
		}
	}
	for tok, g := range s.refresh {
		if g.account == accountID {
			delete(s.refresh, tok)
		}
	}
}

// RejectImage makes POST /v5/pins answer 403 with code (such as
// CodeImageFetchFailed or CodeImageInvalid) for imageURL.
func (s *Server) RejectImage(imageURL string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejects[imageURL] = code
}

// Inject adds f to the faults.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := f.Times
	if left == 0 {
		left = 1
	}
	s.faults = append(s.faults, &activeFault{Fault: f, left: left})
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Pin is a pin the Server created.
type Pin struct {
	ID          string
	AccountID   string
	BoardID     string
	ImageURL    string
	Link        string
	Title       string
	Description string
	AltText     string
	// CreatedAt is the Server's clock when the pin was created, or the
	// instant CreateDirect was given.
	CreatedAt time.Time
	// Direct marks a pin made by CreateDirect, as by the account's owner
	// without pinbot, rather than through POST /v5/pins.
	Direct bool
}

// CreateDirect records p as a pin that the owner of p.AccountID made
// without pinbot (in the Pinterest app, or with another tool), on the
// account's board p.BoardID, created at p.CreatedAt (the Server's clock
// now when zero), which may be in the past. It returns the pin as
// recorded, with its id and Direct set; p.ID is ignored. The pin is in
// Pins, PinsFor, MaxInWindow (not MaxSentInWindow), the account's pin
// count, and the listings once the Server's clock reaches its creation
// time plus the listing lag (see SetListingLag); no request is recorded
// for it. It panics if the account or the
// board is unknown, as a test set up wrong.
func (s *Server) CreateDirect(p Pin) Pin {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[p.AccountID]
	if !ok || !a.hasBoard(p.BoardID) {
		panic(fmt.Sprintf("pinteresttest: CreateDirect: account %q has no board %q", p.AccountID, p.BoardID))
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.now()
	}
	p.Direct = true
	return s.recordPinLocked(p)
}

// recordPinLocked gives p the next pin id, records it and wakes
// WaitPins. s.mu is held.
func (s *Server) recordPinLocked(p Pin) Pin {
	s.pinSeq++
	p.ID = strconv.FormatUint(1_000_000_000_000_000_000+s.pinSeq, 10)
	s.pins = append(s.pins, p)
	if s.pinned != nil {
		close(s.pinned)
		s.pinned = nil
	}
	return p
}

// Pins returns a copy of every pin created, in the order they were
// recorded (a direct pin may be recorded after pins it predates).
func (s *Server) Pins() []Pin {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pins)
}

// WaitPins waits until accountID has at least n pins, and returns them;
// or returns ctx's error.
func (s *Server) WaitPins(ctx context.Context, accountID string, n int) ([]Pin, error) {
	for {
		s.mu.Lock()
		if s.pinned == nil {
			s.pinned = make(chan struct{})
		}
		ch := s.pinned
		s.mu.Unlock()
		if pins := s.PinsFor(accountID); len(pins) >= n {
			return pins, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return s.PinsFor(accountID), fmt.Errorf("pinteresttest: waiting for %d pins of %s: %w", n, accountID, ctx.Err())
		}
	}
}

// PinsFor returns a copy of the pins created on accountID's boards.
func (s *Server) PinsFor(accountID string) []Pin {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Pin
	for _, p := range s.pins {
		if p.AccountID == accountID {
			out = append(out, p)
		}
	}
	return out
}

// MaxInWindow returns the largest number of accountID's pins whose
// creation times fall in one interval [t, t+window), over every t: the
// busiest rolling window as Pinterest would see it. It counts every pin
// of the account, those made by CreateDirect included: the account's
// ledger, which a limit on all of an account's pins keeps. Pins exactly
// window apart are not in the same window. It is 0 when window is not
// positive.
func (s *Server) MaxInWindow(accountID string, window time.Duration) int {
	return maxInWindow(s.PinsFor(accountID), window)
}

// MaxSentInWindow is MaxInWindow counting only the pins made through
// POST /v5/pins, not those of CreateDirect: pinbot's share of the
// account's ledger.
func (s *Server) MaxSentInWindow(accountID string, window time.Duration) int {
	pins := s.PinsFor(accountID)
	pins = slices.DeleteFunc(pins, func(p Pin) bool { return p.Direct })
	return maxInWindow(pins, window)
}

// maxInWindow is the largest number of pins whose creation times fall
// in one interval [t, t+window).
func maxInWindow(pins []Pin, window time.Duration) int {
	if window <= 0 {
		return 0
	}
	var times []time.Time
	for _, p := range pins {
		times = append(times, p.CreatedAt)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	best, j := 0, 0
	for i := range times {
		end := times[i].Add(window)
		if j < i {
			j = i
		}
		for j < len(times) && times[j].Before(end) {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

// Request is a request the Server received.
type Request struct {
	Method string
	Path   string
	// AccountID is the account whose access token the request carried,
	// or whose grant a token request used; "" when unknown.
	AccountID string
	// Status is the status answered; 0 until answered, and for a request
	// the Server saw the client give up on before answering, including a
	// Detached request whose effect happened after its client gave up
	// (the answer went nowhere).
	Status int
	// RequestID is the x-pinterest-rid answered.
	RequestID string
	// At is the Server's clock when the request arrived. A pin's CreatedAt
	// is the Server's clock when the endpoint ran, later than At when the
	// request was held.
	At time.Time
	// PinID is the id of the pin the request created, if any, even when
	// the answer said otherwise (AfterEffect) or went nowhere (Detached).
	PinID string
}

// Requests returns a copy of every request received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Count returns how many requests with method and path were received; ""
// matches any method or any path.
func (s *Server) Count(method, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if (method == "" || r.Method == method) && (path == "" || r.Path == path) {
			n++
		}
	}
	return n
}

// result is an answer before it is written.
type result struct {
	status  int
	body    any // JSON-encoded when not nil
	header  http.Header
	account string
	pin     string // id of the pin created, if any
}

// maxBody bounds the request bodies the Server reads ahead of its
// endpoints; each endpoint applies its own, smaller limit.
const maxBody = 1<<20 + 1

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seq++
	rid := strconv.FormatUint(9_000_000_000+s.seq, 10)
	idx := len(s.requests)
	s.requests = append(s.requests, Request{
		Method:    r.Method,
		Path:      r.URL.Path,
		AccountID: s.bearerAccountLocked(r),
		RequestID: rid,
		At:        s.now(),
	})
	f := s.takeFaultLocked(r.Method, r.URL.Path)
	var quota http.Header
	overQuota := false
	if f == nil || f.Status == 0 || f.AfterEffect {
		quota, overQuota = s.takeQuotaLocked(r)
	}
	s.mu.Unlock()

	answer := true // false: the client is gone, the answer goes nowhere
	if f != nil {
		if f.Done != nil {
			defer s.signal(f.Done)
		}
		// Read the body before any hold: net/http notices a client giving
		// up only once the body is read, and a Detached request must not
		// need its client when the hold ends.
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			// The request never fully arrived.
			abort(w)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		carryOn, gaveUp := s.hold(r.Context(), f)
		if !carryOn {
			abort(w)
			return
		}
		answer = !gaveUp && (!f.Detached || r.Context().Err() == nil)
	}
	var res result
	if f != nil && f.Status != 0 && !f.AfterEffect {
		res = faultResult(f)
	} else if overQuota {
		res = rateLimitedResult()
	} else {
		res = s.route(r, f)
		if p, ok := res.body.(pinAnswer); ok {
			res.pin = p.ID
		}
		if f != nil && f.AfterEffect && f.Status != 0 {
			acct, pin := res.account, res.pin
			res = faultResult(f)
			res.account, res.pin = acct, pin
		}
	}
	if res.header == nil {
		res.header = http.Header{}
	}
	for k, vs := range quota {
		res.header[k] = vs
	}
	if f != nil {
		for k, vs := range f.Header {
			for _, v := range vs {
				res.header.Add(k, v)
			}
		}
	}
	res.header.Set("X-Pinterest-Rid", rid)

	s.mu.Lock()
	rec := &s.requests[idx]
	if answer {
		rec.Status = res.status
	}
	if rec.AccountID == "" {
		rec.AccountID = res.account
	}
	rec.PinID = res.pin
	s.mu.Unlock()

	if !answer {
		abort(w)
		return
	}
	h := w.Header()
	for k, vs := range res.header {
		h[k] = vs
	}
	if res.body != nil {
		h.Set("Content-Type", "application/json")
	}
	w.WriteHeader(res.status)
	if res.body != nil {
		_ = json.NewEncoder(w).Encode(res.body)
	}
	if f != nil && f.Done != nil {
		// Send the answer before Done says the Server is finished.
		_ = http.NewResponseController(w).Flush()
	}
}

// hold signals f.Arrived and waits out f's Hang, Delay and Until. carryOn
// reports whether the endpoint is to run: the hold ended, the Server is not
// closing, and the client is still there or the request is Detached.
// gaveUp reports whether the Server saw the client give up meanwhile.
func (s *Server) hold(ctx context.Context, f *Fault) (carryOn, gaveUp bool) {
	gone := ctx.Done()
	// left notes the client giving up and reports whether that ends the
	// hold; a Detached request stays held, no longer watching the client.
	left := func() bool {
		gone, gaveUp = nil, true
		s.signal(f.GaveUp)
		return !f.Detached
	}
	// wait waits for release; false: the hold ended without it.
	wait := func(release <-chan struct{}) bool {
		for {
			select {
			case <-release:
				return true
			case <-gone:
				if left() {
					return false
				}
			case <-s.closing:
				return false
			}
		}
	}
	if f.Arrived != nil {
		select {
		case f.Arrived <- struct{}{}:
		case <-gone:
			if left() {
				return false, gaveUp
			}
		case <-s.closing:
			return false, gaveUp
		}
	}
	if f.Hang {
		if gone != nil {
			select {
			case <-gone:
				left()
			case <-s.closing:
			}
		}
		return false, gaveUp
	}
	if f.Delay > 0 {
		elapsed := make(chan struct{})
		t := time.AfterFunc(f.Delay, func() { close(elapsed) })
		defer t.Stop()
		if !wait(elapsed) {
			return false, gaveUp
		}
	}
	if f.Until != nil && !wait(f.Until) {
		return false, gaveUp
	}
	select {
	case <-s.closing:
		// Released as the Server closes: Close wins, as it does for a
		// request without a hold arriving then.
		return false, gaveUp
	default:
	}
	return true, gaveUp
}

// signal sends on ch, when not nil, unless the Server closes first.
func (s *Server) signal(ch chan<- struct{}) {
	if ch == nil {
		return
	}
	select {
	case <-s.closing:
		return
	default:
	}
	select {
	case ch <- struct{}{}:
	case <-s.closing:
	}
}

// abort drops the connection without an answer, as a server that never
// answered would when it finally goes away.
func abort(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	conn, _, err := rc.Hijack()
	if err != nil {
		return
	}
	_ = conn.Close()
}

// takeFaultLocked returns the first fault matching the request and uses
// one of its applications, or returns nil.
func (s *Server) takeFaultLocked(method, path string) *Fault {
	for i, f := range s.faults {
		if !f.matches(method, path) {
			continue
		}
		out := f.Fault
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
		}
		return &out
	}
	return nil
}

func faultResult(f *Fault) result {
	return errorResult(f.Status, f.Code, f.Message)
}

// errorBody is Pinterest's error format.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func errorResult(status, code int, msg string) result {
	if msg == "" {
		msg = http.StatusText(status)
	}
	return result{status: status, body: errorBody{Code: code, Message: msg}}
}

func (s *Server) route(r *http.Request, f *Fault) result {
	switch {
	case r.URL.Path == PathAuthorize && r.Method == http.MethodGet:
		return s.authorize(r)
	case r.URL.Path == PathToken && r.Method == http.MethodPost:
		return s.token(r)
	case r.URL.Path == PathPins && r.Method == http.MethodPost:
		return s.createPin(r)
	case r.URL.Path == PathPins && r.Method == http.MethodGet:
		return s.listPins(r, "", f != nil && f.StuckBookmark)
	case r.URL.Path == PathBoards && r.Method == http.MethodGet:
		return s.listBoards(r, f != nil && f.StuckBookmark)
	case r.URL.Path == PathUserAccount && r.Method == http.MethodGet:
		return s.userAccount(r)
	}
	if board, ok := boardOfPinsPath(r.URL.Path); ok && r.Method == http.MethodGet {
		return s.listPins(r, board, f != nil && f.StuckBookmark)
	}
	return errorResult(http.StatusNotFound, http.StatusNotFound, "Not found.")
}
