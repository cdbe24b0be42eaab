// Package web is the bot's HTTP listener: the OAuth callback Pinterest
// redirects users to after they authorize the bot, the page where the
// browser confirms the link, the callback of the sign-in with Discord, and
// a health check.
//
//	GET  /oauth/callback?code=…&state=…  check, read both accounts, keep the link waiting
//	GET  /oauth/callback?error=…&state=… the user declined (access_denied)
//	GET  /oauth/confirm?link=…           the confirmation page
//	POST /oauth/confirm                  link=…&csrf=…&action=confirm|cancel: store it, or not
//	GET  /oauth/discord?code=…&state=…   back from signing in with Discord
//	GET  /healthz                        200 "ok" while the process lives
//
// Every other path answers 404 and every other method 405.
//
// # Why a confirmation
//
// /link hands its user an address bound to their Discord account.
// Whoever opens it and approves on Pinterest would link their Pinterest
// account to that Discord user: someone could send their address to a
// victim, who approves, and then pin to the victim's account. So the
// callback stores nothing. It shows who the link is for and asks the
// browser to confirm, with a warning: "Only continue if you are <the
// Discord user> and you ran /link yourself".
//
// # The callback
//
// The state is consumed first (links.Store.ConsumeLinkState): a forged,
// replayed or expired state gets a 400 page saying so, and Pinterest is
// not contacted. Then the Discord user who ran /link is read (GET
// /users/{id} with the bot token; if Discord cannot say, the code is not
// exchanged). Then the code is exchanged for a token. A token whose
// granted scopes lack any that pinbot asked for (pinterest.ErrScopesMissing)
// gets a 403 page naming them; nothing is kept, and Config.OnRefused tells
// the user who ran /link. Otherwise the account is read
// with GET /user_account (its id is the key of the rate limit), its
// boards are listed, and both pictures are fetched (below). An account
// with exactly one board will get it as its default board, unless it has
// one already. All of that, token included, is kept in memory as a link
// waiting for confirmation, for Config.ConfirmTTL (5 minutes), bound to
// the browser by a cookie (HttpOnly, SameSite=Lax, Secure and __Host-
// under https). The browser is sent, with a 303, to the confirmation page.
// Pinterest failing (5xx, timeout, rate limit) gets a 502 page asking the
// user to run /link again; nothing is kept then.
//
// The token waits in memory only: never on the page, never on disk until
// the confirmation. Nothing refreshes it while it waits (it is minutes
// old, and a refresh rotates the refresh token: the one stored must be
// the live one). A restart forgets the waiting links; the user runs /link
// again.
//
// # The confirmation
//
// The page names the Discord user (display name, @username, ID, avatar)
// and the Pinterest account (@username, profile image), says where pins
// will go, and has a form with the link's id, its CSRF token and two
// buttons, confirm and cancel. Only a POST of that form stores the link
// (links.Store.Link, which makes the account the user's active one), and
// only once: from the browser whose cookie the link is bound to, with the
// link's token (256 random bits, compared in constant time), before the
// link expires, from the bot's own origin (http.CrossOriginProtection,
// and the cookie's SameSite). Once it is stored, Config.OnLinked tells
// the user who ran /link which account was linked to them: whoever holds
// a /link address can approve with their own account. A POST that fails a check gets a page
// saying why and stores nothing; one that names the link but fails its
// checks (token, browser, sign-in) also cancels it, so that a token
// cannot be guessed at. A second POST
// of a confirmed link gets 409 "confirmed already". A GET never stores
// anything; one carrying the form's fields gets a page saying that only
// the page's button confirms.
//
// # Signing in with Discord
//
// When Config.Discord has a client secret, the page also asks the browser
// to sign in with Discord (OAuth2 authorization code flow, scope
// identify) before it shows the confirm button. Discord sends the browser
// back to DiscordCallbackPath with a code and a state bound to the link
// and the browser, single use; the code is exchanged and GET /users/@me
// says who signed in. The user who ran /link goes back to the page, now
// able to confirm; anyone else gets a page saying who signed in and who
// ran /link, and the link is canceled. Without the secret the warning
// alone protects the link.
//
// # Pages
//
// Pages are small, server-rendered HTML with every field escaped. The two
// pictures are fetched by the handler, only from Config.AvatarSources
// (Discord's CDN and Pinterest's image host), at most 256 KiB each, and
// shown as data: URLs only if they are PNG, JPEG, GIF or WebP: the page
// loads nothing from anywhere. Every answer carries Cache-Control:
// no-store, Referrer-Policy: no-referrer, X-Frame-Options: DENY,
// X-Content-Type-Options: nosniff and a Content-Security-Policy allowing
// only its own inline style (by hash), data: pictures and forms to its
// own origin. The handler never logs tokens, codes, cookies, CSRF tokens,
// or more than the first characters of a state or a link's id; it logs
// Pinterest's x-pinterest-rid when a Pinterest call fails.
//
// # Usage
//
//	h, err := web.New(web.Config{Links: store, Pinterest: client, Discord: users, Log: log})
//	srv := h.Server("127.0.0.1:8080") // http.Server with the timeouts below
//	go srv.ListenAndServe()
//	defer srv.Shutdown(ctx)
//
// # Server timeouts
//
// The handler bounds its own work by Config.CallbackTimeout; the
// http.Server bounds the connection. Handler.Server sets:
//
//	ReadHeaderTimeout  5 s   (slow-header clients)
//	ReadTimeout        10 s  (the only body is a form of a few hundred bytes)
//	WriteTimeout       CallbackTimeout + 15 s
//	IdleTimeout        60 s
//	MaxHeaderBytes     16 KiB (the addresses are short)
package web
