package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/discorduser"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
)

// maxAccounts is links.MaxAccountsPerUser, for the page that mentions it.
const maxAccounts = links.MaxAccountsPerUser

// statePrefixLen is how many characters of a state may be logged: enough
// to match log lines of one link, far too few to use the state.
const statePrefixLen = 6

// callback serves Pinterest's redirect back to the bot: it checks the
// state, reads who ran /link from Discord, exchanges the code, reads the
// Pinterest account, and keeps all that, token included, in memory as a
// link waiting for confirmation, bound to this browser by a cookie. It
// stores nothing: it sends the browser to the confirmation page.
func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.RawQuery) > maxQueryLen {
		h.logger(r.Context()).Info().Int("query_bytes", len(r.URL.RawQuery)).Msg("oauth callback: query too long")
		writePage(w, http.StatusBadRequest, pageMissing)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		h.logger(r.Context()).Info().Msg("oauth callback: malformed query")
		writePage(w, http.StatusBadRequest, pageMissing)
		return
	}
	state := q.Get("state")
	log := h.logger(r.Context()).With().Str("state_prefix", prefix(state)).Logger()

	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()

	if e := q.Get("error"); e != "" {
		h.declined(ctx, w, log, state, e)
		return
	}
	code := q.Get("code")
	if state == "" || code == "" {
		log.Info().Bool("has_state", state != "").Bool("has_code", code != "").
			Msg("oauth callback: missing state or code")
		writePage(w, http.StatusBadRequest, pageMissing)
		return
	}

	req, err := h.links.ConsumeLinkState(ctx, state, h.now())
	switch {
	case errors.Is(err, links.ErrStateExpired):
		log.Info().Msg("oauth callback: state expired")
		writePage(w, http.StatusBadRequest, pageStateExpired)
		return
	case errors.Is(err, links.ErrStateInvalid):
		log.Warn().Msg("oauth callback: state invalid (forged, replayed or unknown)")
		writePage(w, http.StatusBadRequest, pageStateInvalid)
		return
	case err != nil:
		log.Error().Err(err).Msg("oauth callback: checking state failed")
		writePage(w, http.StatusInternalServerError, pageInternal)
		return
	}
	log = log.With().Str("user", req.User).Logger()

	// Who ran /link, to name on the confirmation page; asked before the
	// code is exchanged, so that no grant is made for a page that cannot
	// be shown.
	du, err := h.discord.User(ctx, req.User)
	if err != nil {
		if errors.Is(err, discorduser.ErrUnknownUser) {
			log.Warn().Err(err).Msg("oauth callback: discord does not know the user who ran /link")
			writePage(w, http.StatusBadRequest, pageDiscordUnknownUser)
			return
		}
		log.Warn().Err(err).Msg("oauth callback: reading the discord user failed")
		writePage(w, http.StatusBadGateway, pageDiscordDown)
		return
	}

	// The state is spent and, once exchanged, so is the code: finish even
	// if the browser goes away now.
	pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
	defer pcancel()
	tok, err := h.pin.Exchange(pctx, code)
	var se *pinterest.ScopeError
	switch {
	case errors.As(err, &se):
		// A token some of the bot's calls would fail with: dropped, and
		// the user who ran /link told.
		log.Warn().Strs("missing_scopes", se.Missing).Strs("granted_scopes", se.Granted).
			Msg("oauth callback: pinterest granted fewer scopes than pinbot needs; nothing linked")
		if h.onRefused != nil {
			h.onRefused(req, se.Missing)
		}
		writePage(w, http.StatusForbidden, pageScopesMissing(se.Missing))
		return
	case err != nil:
		h.pinterestFailed(w, log, "exchange code", err)
		return
	}
	// The account id is only known after GET /user_account. The token
	// stays in memory, and is stored only once the browser confirms. The
	// token is minutes old, so nothing here refreshes it; should Pinterest
	// rotate it all the same, the Session keeps the new one, and that is
	// the one kept.
	sess, err := pinterest.NewSession(tok, keepInMemory)
	if err != nil {
		log.Error().Err(err).Msg("oauth callback: unusable token from Pinterest")
		writePage(w, http.StatusBadGateway, pagePinterestDown)
		return
	}
	pa, err := h.pin.UserAccount(pctx, sess)
	if err != nil {
		h.pinterestFailed(w, log, "read user account", err)
		return
	}
	log = log.With().Str("account", pa.ID).Logger()
	acct := links.Account{ID: pa.ID, Username: pa.Username}
	// An account with exactly one board pins there without asking: that
	// board becomes its default, unless it has one already (Link keeps
	// it). Without the list, the user chooses in /settings.
	if boards, err := h.pin.ListBoards(pctx, sess); err != nil {
		log.Warn().Err(err).Msg("oauth callback: listing boards failed; no default board set")
	} else if len(boards) == 1 {
		acct.DefaultBoard, acct.DefaultBoardName = boards[0].ID, boards[0].Name
	}
	if stored, err := h.links.Account(pctx, pa.ID); err == nil && stored.DefaultBoard != "" {
		acct.DefaultBoard, acct.DefaultBoardName = stored.DefaultBoard, stored.DefaultBoardName
	}
	userPic, acctPic := h.fetchBoth(pctx, h.discord.AvatarURL(du), pa.ProfileImage)

	browser := h.browserCookie(r)
	if browser == "" {
		if browser, err = newSecret(); err != nil {
			log.Error().Err(err).Msg("oauth callback: no random bytes for the browser's cookie")
			writePage(w, http.StatusInternalServerError, pageInternal)
			return
		}
	}
	p, err := h.pending.add(pendingLink{
		req:     req,
		browser: browser,
		user:    du,
		userPic: userPic,
		acct:    acct,
		acctPic: acctPic,
		tok:     sess.Token(),
		expires: h.now().Add(h.confirmTTL),
	}, h.now())
	switch {
	case errors.Is(err, errTooManyPending):
		log.Warn().Msg("oauth callback: too many links waiting for confirmation")
		writePage(w, http.StatusServiceUnavailable, pageBusy)
		return
	case err != nil:
		log.Error().Err(err).Msg("oauth callback: keeping the link for confirmation failed")
		writePage(w, http.StatusInternalServerError, pageInternal)
		return
	}
	log.Info().Str("link_prefix", prefix(p.id)).Msg("oauth callback: link waiting for confirmation")
	h.setBrowserCookie(w, browser)
	h.redirect(w, confirmRef(p.id))
}

// boardNote says where the newly linked account's pins go, and how to
// choose.
func boardNote(acct links.Account) string {
	if acct.DefaultBoard == "" {
		return "Before you pin, choose the board pins go to with /settings in Discord (or name one with the board: option of /pin)."
	}
	board := acct.DefaultBoardName
	if board == "" {
		board = acct.DefaultBoard
	}
	return "Pins go to its board " + board + "; choose another default board with /settings in Discord."
}

// declined answers a redirect carrying an OAuth error instead of a code.
// The state, if valid, is consumed so that it cannot be used afterwards.
func (h *Handler) declined(ctx context.Context, w http.ResponseWriter, log zerolog.Logger, state, oauthErr string) {
	if len(oauthErr) > 64 {
		oauthErr = oauthErr[:64]
	}
	log = log.With().Str("oauth_error", oauthErr).Logger()
	if state != "" {
		if _, err := h.links.ConsumeState(ctx, state, h.now()); err != nil &&
			!errors.Is(err, links.ErrStateInvalid) && !errors.Is(err, links.ErrStateExpired) {
			log.Error().Err(err).Msg("oauth callback: consuming declined state failed")
		}
	}
	switch oauthErr {
	case "access_denied":
		log.Info().Msg("oauth callback: user declined")
		writePage(w, http.StatusOK, pageDenied)
	case "server_error", "temporarily_unavailable":
		log.Warn().Msg("oauth callback: pinterest reported an error")
		writePage(w, http.StatusBadGateway, pagePinterestDown)
	default:
		// Only the error codes of RFC 6749 are shown: the parameter is
		// whatever the link's author put in it.
		shown := ""
		switch oauthErr {
		case "invalid_request", "unauthorized_client", "unsupported_response_type", "invalid_scope":
			shown = " (" + oauthErr + ")"
		}
		log.Warn().Msg("oauth callback: pinterest refused the authorization request")
		writePage(w, http.StatusBadRequest, page{
			Title:   "Nothing linked",
			Message: "Pinterest refused the link request" + shown + ". Nothing was linked. Run /link in Discord to try again.",
		})
	}
}

// pinterestFailed answers a failed call to Pinterest: 400 when Pinterest
// rejected the code, else 502. It logs the request id Pinterest gave.
func (h *Handler) pinterestFailed(w http.ResponseWriter, log zerolog.Logger, op string, err error) {
	ev := log.Warn().Str("op", op).Err(err)
	var ae *pinterest.APIError
	if errors.As(err, &ae) {
		ev = ev.Int("status", ae.Status).Str("rid", ae.RequestID)
	}
	if errors.Is(err, pinterest.ErrReauthRequired) {
		ev.Msg("oauth callback: pinterest rejected the grant")
		writePage(w, http.StatusBadRequest, pageCodeRejected)
		return
	}
	ev.Msg("oauth callback: pinterest call failed")
	writePage(w, http.StatusBadGateway, pagePinterestDown)
}

// keepInMemory is the TokenSaver of the callback's Session: the token is
// stored by Link once the browser confirms the link.
func keepInMemory(context.Context, *oauth2.Token) error { return nil }

// prefix returns the first characters of state, for logs.
func prefix(state string) string {
	if len(state) <= statePrefixLen {
		return state
	}
	return state[:statePrefixLen]
}
