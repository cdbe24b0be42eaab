package web

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
)

// Names of the browser's cookie, which binds a link waiting for
// confirmation to the browser that came back from Pinterest. The
// __Host- prefix, which only https allows, keeps other hosts of the
// domain from setting it.
const (
	cookieName       = "pinbot_browser"
	secureCookieName = "__Host-pinbot_browser"
)

// showConfirm serves GET ConfirmPath?link=…: the confirmation page of a
// link waiting in this browser. It changes nothing but the state of a
// Discord sign-in (a new one for each page).
func (h *Handler) showConfirm(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > maxQueryLen {
		writePage(w, http.StatusBadRequest, pageConfirmUnknown)
		return
	}
	q := r.URL.Query()
	id := q.Get("link")
	log := h.logger(r.Context()).With().Str("link_prefix", prefix(id)).Logger()
	if q.Has("csrf") || q.Has("action") {
		// The form sent as a GET (or a link made to look like it): a GET
		// confirms nothing, and says so.
		log.Warn().Msg("confirmation refused: a GET")
		writePage(w, http.StatusBadRequest, pageConfirmByGet)
		return
	}
	browser := h.browserCookie(r)
	now := h.now()
	p, err := h.pending.view(id, browser, now)
	if err != nil {
		h.refused(w, log, "confirmation page", err)
		return
	}
	v := confirmView{
		Title: "Confirm the link",
		Message: "Only continue if you are " + p.user.Name() + " (@" + p.user.Username + ") on Discord and you ran /link yourself. " +
			"If someone sent you this link, stop here and press Cancel: continuing would let them pin to your Pinterest account.",
		DiscordName:     p.user.Name(),
		DiscordUsername: p.user.Username,
		DiscordID:       p.user.ID,
		DiscordPic:      p.userPic,
		PinterestName:   accountName(p.acct),
		PinterestPic:    p.acctPic,
		Board:           boardNote(p.acct),
		CanConfirm:      !h.signIn || p.signedIn,
		Action:          confirmName,
		LinkID:          p.id,
		CSRF:            p.csrf,
		Expires:         p.expires.UTC().Format("15:04 MST") + " (" + ttlText(p.expires.Sub(now)) + ")",
		ConfirmButton:   "Link @" + accountName(p.acct) + " to " + p.user.Name(),
	}
	switch {
	case h.signIn && p.signedIn:
		v.SignedInAs = p.user.Name() + " (@" + p.user.Username + ")"
	case h.signIn:
		state, err := h.pending.startSignIn(id, browser, now)
		if err != nil {
			h.refused(w, log, "confirmation page", err)
			return
		}
		v.SignInURL = h.discord.AuthCodeURL(state)
	}
	render(w, http.StatusOK, confirmTemplate, v, v.Message)
}

// confirm serves POST ConfirmPath: the confirmation form, with the link's
// id, its CSRF token and action=confirm or cancel. The link is stored
// only here, once, and only from the browser that came back from
// Pinterest, with the page's token, before the page expires, and, when
// sign-in is required, once the browser signed in with Discord as the
// user who ran /link.
func (h *Handler) confirm(w http.ResponseWriter, r *http.Request) {
	if err := h.origins.Check(r); err != nil {
		h.logger(r.Context()).Warn().Err(err).Msg("confirmation refused: cross-origin request")
		writePage(w, http.StatusForbidden, pageBadCSRF)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		h.logger(r.Context()).Info().Msg("confirmation refused: not a form")
		writePage(w, http.StatusBadRequest, pageBadCSRF)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		h.logger(r.Context()).Info().Msg("confirmation refused: unreadable form")
		writePage(w, http.StatusBadRequest, pageBadCSRF)
		return
	}
	id, csrf, action := r.PostForm.Get("link"), r.PostForm.Get("csrf"), r.PostForm.Get("action")
	log := h.logger(r.Context()).With().Str("link_prefix", prefix(id)).Logger()
	browser := h.browserCookie(r)
	now := h.now()

	if action == "cancel" {
		if err := h.pending.cancel(id, browser, csrf, now); err != nil {
			h.refused(w, log, "cancel", err)
			return
		}
		log.Info().Msg("link canceled in the browser")
		writePage(w, http.StatusOK, pageCanceledByUser)
		return
	}
	if action != "confirm" {
		// Not the page's form: spend the link all the same.
		_ = h.pending.cancel(id, browser, "", now)
		log.Info().Msg("confirmation refused: unknown action")
		writePage(w, http.StatusBadRequest, pageBadCSRF)
		return
	}
	p, err := h.pending.take(id, browser, csrf, h.signIn, now)
	if err != nil {
		h.refused(w, log, "confirm", err)
		return
	}
	log = log.With().Str("user", p.user.ID).Str("account", p.acct.ID).Logger()
	h.store(r.Context(), w, log, p)
}

// store links p's account to its user with p's token, and says so. ctx
// is the request's: the link is stored even if it ends.
func (h *Handler) store(ctx context.Context, w http.ResponseWriter, log zerolog.Logger, p pendingLink) {
	// The browser confirmed: store the grant even if it goes away now.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
	defer cancel()
	if err := h.links.Link(lctx, p.user.ID, p.acct, p.tok); err != nil {
		if errors.Is(err, links.ErrTooManyAccounts) {
			log.Info().Msg("confirmation: user has too many accounts")
			writePage(w, http.StatusConflict, pageTooMany)
			return
		}
		log.Error().Err(err).Msg("confirmation: storing the link failed")
		writePage(w, http.StatusInternalServerError, pageInternal)
		return
	}
	acct := p.acct
	if stored, err := h.links.Account(lctx, acct.ID); err == nil {
		acct = stored
	} else {
		log.Warn().Err(err).Msg("confirmation: reading the linked account back failed")
	}
	log.Info().Bool("signed_in", p.signedIn).Msg("oauth callback: pinterest account linked")
	if h.onLinked != nil {
		h.onLinked(p.req, acct)
	}
	writePage(w, http.StatusOK, page{
		Title: "Linked",
		Message: "Linked Pinterest account " + accountName(acct) + " to the Discord account " + p.user.Name() + " (@" + p.user.Username +
			") that asked for this link with /link. " + boardNote(acct) + " You can close this tab and go back to Discord. " +
			"If that was not you, remove Pinbot from the apps connected to your Pinterest account.",
	})
}

// refused answers a confirmation step that a pending link's checks
// refused.
func (h *Handler) refused(w http.ResponseWriter, log zerolog.Logger, step string, err error) {
	log = log.With().Str("step", step).Logger()
	switch {
	case errors.Is(err, errPendingUnknown):
		log.Info().Msg("confirmation refused: unknown link")
		writePage(w, http.StatusBadRequest, pageConfirmUnknown)
	case errors.Is(err, errPendingExpired):
		log.Info().Msg("confirmation refused: expired")
		writePage(w, http.StatusBadRequest, pageConfirmExpired)
	case errors.Is(err, errOtherBrowser):
		log.Warn().Msg("confirmation refused: another browser")
		writePage(w, http.StatusForbidden, pageOtherBrowser)
	case errors.Is(err, errBadCSRF):
		log.Warn().Msg("confirmation refused: wrong or missing CSRF token; link canceled")
		writePage(w, http.StatusForbidden, pageBadCSRF)
	case errors.Is(err, errNotSignedIn):
		log.Warn().Msg("confirmation refused: not signed in with Discord; link canceled")
		writePage(w, http.StatusForbidden, pageNotSignedIn)
	case errors.Is(err, errAlreadyLinked):
		log.Info().Msg("confirmation refused: already linked")
		writePage(w, http.StatusConflict, pageAlreadyLinked)
	case errors.Is(err, errCanceled):
		log.Info().Msg("confirmation refused: link canceled")
		writePage(w, http.StatusConflict, pageCanceled)
	default:
		log.Error().Err(err).Msg("confirmation failed")
		writePage(w, http.StatusInternalServerError, pageInternal)
	}
}

// browserCookie returns the request's browser cookie, "" when it has
// none that NewSecret could have made.
func (h *Handler) browserCookie(r *http.Request) string {
	c, err := r.Cookie(h.cookie)
	if err != nil || !wellFormedSecret(c.Value) {
		return ""
	}
	return c.Value
}

// setBrowserCookie sets the browser cookie: for this site only, out of
// scripts' reach, sent on top-level navigations from other sites (the
// redirect back from Discord) but not on their POSTs, and gone when the
// browser closes.
func (h *Handler) setBrowserCookie(w http.ResponseWriter, value string) {
	http.SetCookie(w, &http.Cookie{
		Name:     h.cookie,
		Value:    value,
		Path:     "/",
		HttpOnly: true,
		Secure:   h.secure,
		SameSite: http.SameSiteLaxMode,
	})
}

// confirmName is ConfirmPath relative to its directory, which holds
// every page of the flow: links and redirects are relative, so that they
// stay right when a proxy serves the listener under a path of its own
// (PUBLIC_URL https://example.org/pinbot).
const confirmName = "confirm"

// confirmRef is the relative address of link id's confirmation page.
func confirmRef(id string) string { return confirmName + "?" + url.Values{"link": {id}}.Encode() }

// redirect sends the browser to location, an address relative to the
// request's, with a GET.
func (h *Handler) redirect(w http.ResponseWriter, location string) {
	setPageHeaders(w.Header())
	w.Header().Set("Location", location)
	w.WriteHeader(http.StatusSeeOther)
}

// accountName is the account's username, else its id.
func accountName(a links.Account) string {
	if a.Username != "" {
		return a.Username
	}
	return a.ID
}

// ttlText says how long is left, in whole minutes (at least one).
func ttlText(d time.Duration) string {
	m := int((d + time.Minute - 1) / time.Minute)
	switch {
	case m <= 1:
		return "in a minute"
	default:
		return "in " + strconv.Itoa(m) + " minutes"
	}
}
