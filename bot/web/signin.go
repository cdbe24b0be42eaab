package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/pinbot/pinbot/bot/discorduser"
)

// discordCallback serves Discord's redirect back after the browser signed
// in (GET DiscordCallbackPath?code=…&state=…, or ?error=…&state=…). The
// state, single use, names the link waiting in this browser; the code
// says who signed in. The same Discord user who ran /link goes back to
// the confirmation page, now able to confirm; anyone else cancels the
// link and is told who signed in and who ran /link. Nothing is stored
// here.
func (h *Handler) discordCallback(w http.ResponseWriter, r *http.Request) {
	if !h.signIn || len(r.URL.RawQuery) > maxQueryLen {
		writePage(w, http.StatusBadRequest, pageSignInUnknown)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writePage(w, http.StatusBadRequest, pageSignInUnknown)
		return
	}
	now := h.now()
	browser := h.browserCookie(r)
	p, err := h.pending.claimSignIn(q.Get("state"), browser, now)
	if err != nil {
		if errors.Is(err, errPendingUnknown) {
			h.logger(r.Context()).Info().Msg("discord sign-in refused: unknown state")
			writePage(w, http.StatusBadRequest, pageSignInUnknown)
			return
		}
		h.refused(w, *h.logger(r.Context()), "discord sign-in", err)
		return
	}
	log := h.logger(r.Context()).With().Str("link_prefix", prefix(p.id)).Str("user", p.user.ID).Logger()
	if e := q.Get("error"); e != "" || q.Get("code") == "" {
		// Declined (access_denied), or a redirect without a code: the link
		// cannot be confirmed now.
		_ = h.pending.cancel(p.id, browser, p.csrf, now)
		log.Info().Bool("declined", e != "").Msg("discord sign-in: no code; link canceled")
		writePage(w, http.StatusOK, pageSignInDeclined)
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	me, err := h.discord.SignIn(ctx, q.Get("code"))
	switch {
	case errors.Is(err, discorduser.ErrCodeRejected):
		log.Warn().Err(err).Msg("discord sign-in: code rejected")
		writePage(w, http.StatusBadRequest, pageSignInRejected)
		return
	case err != nil:
		log.Warn().Err(err).Msg("discord sign-in failed")
		writePage(w, http.StatusBadGateway, pageSignInDown)
		return
	}

	err = h.pending.settleSignIn(p.id, browser, me.ID, h.now())
	switch {
	case errors.Is(err, errCanceled):
		log.Warn().Str("signed_in", me.ID).Msg("discord sign-in as another user; link canceled")
		writePage(w, http.StatusForbidden, page{
			Title: "Nothing linked: wrong Discord account",
			Message: "You signed in to Discord as " + me.Name() + " (@" + me.Username + ", ID " + me.ID + "), but /link was run by " +
				p.user.Name() + " (@" + p.user.Username + ", ID " + p.user.ID + "). Nothing was linked, and this link can no longer be used. " +
				"If you want to pin to your Pinterest account, run /link yourself in Discord. If someone sent you this link, " +
				"remove pinbot from the apps connected to your Pinterest account.",
		})
		return
	case err != nil:
		h.refused(w, log, "discord sign-in", err)
		return
	}
	log.Info().Msg("discord sign-in: the user who ran /link")
	h.redirect(w, confirmRef(p.id))
}
