package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"html/template"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/links"
)

// secretBytes is the size of every secret the confirmation step makes (a
// link's id, its CSRF token, a browser's cookie, a sign-in state): 256
// random bits, written as 43 characters of unpadded base64url.
const secretBytes = 32

// secretLen is the length of a secret in characters.
const secretLen = (secretBytes*8 + 5) / 6

// Bounds of the links waiting for confirmation, all in memory.
const (
	// maxPending bounds the links waiting at once; beyond it the callback
	// asks the user to try again in a few minutes.
	maxPending = 4096
	// maxPendingPerUser bounds the links waiting for one Discord user:
	// a new one beyond it drops that user's oldest (as /link's states
	// do, links.MaxStatesPerUser).
	maxPendingPerUser = links.MaxStatesPerUser
)

// Why a pending link cannot be shown or confirmed.
var (
	// errPendingUnknown: no such link waits (never made, or expired and
	// forgotten).
	errPendingUnknown = errors.New("web: no such pending link")
	// errPendingExpired: the link waited longer than its time to live.
	errPendingExpired = errors.New("web: pending link expired")
	// errOtherBrowser: the request does not carry the cookie of the
	// browser that came back from Pinterest.
	errOtherBrowser = errors.New("web: pending link belongs to another browser")
	// errBadCSRF: the form's token is missing or not the link's.
	errBadCSRF = errors.New("web: wrong CSRF token")
	// errNotSignedIn: sign-in with Discord is required and was not done.
	errNotSignedIn = errors.New("web: not signed in with Discord")
	// errAlreadyLinked: the link was confirmed already.
	errAlreadyLinked = errors.New("web: link already confirmed")
	// errCanceled: the link was canceled (by the user, a failed check or
	// a sign-in as someone else).
	errCanceled = errors.New("web: link canceled")
	// errTooManyPending: maxPending links wait already.
	errTooManyPending = errors.New("web: too many links waiting for confirmation")
)

// pendingState is where a pending link is in its life.
type pendingState int

const (
	pendingOpen     pendingState = iota // waiting for the POST
	pendingLinked                       // confirmed and stored
	pendingCanceled                     // will never be stored
)

// pendingLink is a Pinterest grant waiting for the browser to confirm
// that it links the Pinterest account to the Discord user who ran /link.
type pendingLink struct {
	// id names the link in the confirmation page's address and form.
	id string
	// browser is the cookie of the browser that came back from
	// Pinterest; only that browser may see or confirm the link.
	browser string
	// csrf is the token the confirmation form carries.
	csrf string
	// signInHash is the SHA-256 of the state of the Discord sign-in in
	// progress, "" when none.
	signInHash string

	// req is the /link request the link answers, whose user is told
	// once it is stored.
	req links.Request
	// user is the Discord user who ran /link, userPic their avatar as a
	// data: URL ("" when it could not be had).
	user    discorduser.User
	userPic template.URL
	// acct is the Pinterest account with its default board, acctPic its
	// profile image.
	acct    links.Account
	acctPic template.URL
	// tok is Pinterest's grant; nil once the link is confirmed or
	// canceled. It is never refreshed while waiting: a refresh rotates
	// the refresh token, and the one stored must be the live one.
	tok *oauth2.Token

	expires time.Time
	// signedIn is set once the browser signed in with Discord as user.
	signedIn bool
	state    pendingState
}

// pendingLinks holds the links waiting for confirmation, in memory: a
// restart forgets them (the user runs /link again). Expired links are
// dropped, tokens and all, at the next call. It is safe for simultaneous
// use by multiple goroutines.
type pendingLinks struct {
	mu       sync.Mutex
	byID     map[string]*pendingLink
	bySignIn map[string]*pendingLink // by signInHash
}

func newPendingLinks() *pendingLinks {
	return &pendingLinks{byID: map[string]*pendingLink{}, bySignIn: map[string]*pendingLink{}}
}

// add stores p, giving it its id and CSRF token, and returns a copy.
// The user's oldest pending links beyond maxPendingPerUser are dropped.
func (ps *pendingLinks) add(p pendingLink, now time.Time) (pendingLink, error) {
	id, err := newSecret()
	if err != nil {
		return pendingLink{}, err
	}
	csrf, err := newSecret()
	if err != nil {
		return pendingLink{}, err
	}
	p.id, p.csrf, p.state, p.signInHash = id, csrf, pendingOpen, ""
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.purgeLocked(now)
	var mine []*pendingLink
	for _, q := range ps.byID {
		if q.user.ID == p.user.ID && q.state == pendingOpen {
			mine = append(mine, q)
		}
	}
	for len(mine) >= maxPendingPerUser {
		oldest := 0
		for i, q := range mine {
			if q.expires.Before(mine[oldest].expires) {
				oldest = i
			}
		}
		ps.dropLocked(mine[oldest])
		mine = append(mine[:oldest], mine[oldest+1:]...)
	}
	if len(ps.byID) >= maxPending {
		return pendingLink{}, errTooManyPending
	}
	stored := p
	ps.byID[id] = &stored
	return p, nil
}

// view returns the open link id for the page of browser.
func (ps *pendingLinks) view(id, browser string, now time.Time) (pendingLink, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, err := ps.findLocked(id, browser, now)
	if err != nil {
		return pendingLink{}, err
	}
	return p.public(), nil
}

// startSignIn gives link id a new Discord sign-in state, replacing any
// earlier one, and returns it.
func (ps *pendingLinks) startSignIn(id, browser string, now time.Time) (string, error) {
	state, err := newSecret()
	if err != nil {
		return "", err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, err := ps.findLocked(id, browser, now)
	if err != nil {
		return "", err
	}
	if p.signInHash != "" {
		delete(ps.bySignIn, p.signInHash)
	}
	p.signInHash = hashSecret(state)
	ps.bySignIn[p.signInHash] = p
	return state, nil
}

// claimSignIn spends the sign-in state Discord sent back and returns its
// open link, which must belong to browser.
func (ps *pendingLinks) claimSignIn(state, browser string, now time.Time) (pendingLink, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.purgeLocked(now)
	h := hashSecret(state)
	p, ok := ps.bySignIn[h]
	if !ok {
		return pendingLink{}, errPendingUnknown
	}
	delete(ps.bySignIn, h)
	p.signInHash = ""
	if _, err := ps.findLocked(p.id, browser, now); err != nil {
		return pendingLink{}, err
	}
	return p.public(), nil
}

// settleSignIn records that the browser signed in with Discord as
// discordID: link id is marked signed in if that is its user, else it is
// canceled and errCanceled returned.
func (ps *pendingLinks) settleSignIn(id, browser, discordID string, now time.Time) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, err := ps.findLocked(id, browser, now)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(p.user.ID), []byte(discordID)) != 1 {
		ps.cancelLocked(p)
		return errCanceled
	}
	p.signedIn = true
	return nil
}

// take checks a confirmation (the browser's cookie, the form's token,
// and the sign-in with Discord when signIn requires it) and, if it
// passes, marks link id linked and hands over its grant, once. A check
// that fails cancels the link, so that it cannot be guessed at: only an
// unknown link, or one already linked or canceled, is left as it was.
func (ps *pendingLinks) take(id, browser, csrf string, signIn bool, now time.Time) (pendingLink, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, err := ps.checkLocked(id, browser, csrf, now)
	if err != nil {
		return pendingLink{}, err
	}
	if signIn && !p.signedIn {
		ps.cancelLocked(p)
		return pendingLink{}, errNotSignedIn
	}
	out := *p
	p.state, p.tok = pendingLinked, nil
	ps.dropSignInLocked(p)
	return out, nil
}

// cancel cancels link id at the user's request, with the same checks as
// take but for the sign-in.
func (ps *pendingLinks) cancel(id, browser, csrf string, now time.Time) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, err := ps.checkLocked(id, browser, csrf, now)
	if err != nil {
		return err
	}
	ps.cancelLocked(p)
	return nil
}

// checkLocked finds the open link id of browser and checks csrf,
// canceling the link when the token is wrong. ps.mu is held.
func (ps *pendingLinks) checkLocked(id, browser, csrf string, now time.Time) (*pendingLink, error) {
	p, err := ps.findLocked(id, browser, now)
	if err != nil {
		if p != nil && errors.Is(err, errOtherBrowser) {
			ps.cancelLocked(p)
		}
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(csrf), []byte(p.csrf)) != 1 {
		ps.cancelLocked(p)
		return nil, errBadCSRF
	}
	return p, nil
}

// findLocked returns the link id if it is open, unexpired and belongs to
// browser. An expired link is dropped. It also returns the link with
// errOtherBrowser. ps.mu is held.
func (ps *pendingLinks) findLocked(id, browser string, now time.Time) (*pendingLink, error) {
	p, ok := ps.byID[id]
	switch {
	case !ok:
		return nil, errPendingUnknown
	case now.After(p.expires):
		ps.dropLocked(p)
		return nil, errPendingExpired
	case subtle.ConstantTimeCompare([]byte(browser), []byte(p.browser)) != 1:
		return p, errOtherBrowser
	case p.state == pendingLinked:
		return nil, errAlreadyLinked
	case p.state == pendingCanceled:
		return nil, errCanceled
	}
	return p, nil
}

// cancelLocked marks p canceled and drops its grant. ps.mu is held.
func (ps *pendingLinks) cancelLocked(p *pendingLink) {
	if p.state == pendingOpen {
		p.state = pendingCanceled
	}
	p.tok = nil
	ps.dropSignInLocked(p)
}

func (ps *pendingLinks) dropSignInLocked(p *pendingLink) {
	if p.signInHash != "" {
		delete(ps.bySignIn, p.signInHash)
		p.signInHash = ""
	}
}

// dropLocked forgets p. ps.mu is held.
func (ps *pendingLinks) dropLocked(p *pendingLink) {
	p.tok = nil
	ps.dropSignInLocked(p)
	delete(ps.byID, p.id)
}

// purgeLocked forgets the links expired at now. Linked and canceled ones
// are kept until then, so that a second POST is told what happened.
// ps.mu is held.
func (ps *pendingLinks) purgeLocked(now time.Time) {
	for _, p := range ps.byID {
		if now.After(p.expires) {
			ps.dropLocked(p)
		}
	}
}

// public returns a copy of p without its grant.
func (p *pendingLink) public() pendingLink {
	c := *p
	c.tok = nil
	return c
}

// newSecret returns 256 random bits in unpadded base64url.
func newSecret() (string, error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// wellFormedSecret reports whether s looks like a newSecret.
func wellFormedSecret(s string) bool {
	if len(s) != secretLen {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil && len(b) == secretBytes
}

// hashSecret is the key under which a secret is looked up, so that the
// map's timing says nothing about the secret.
func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return string(sum[:])
}
