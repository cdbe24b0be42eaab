// Package web is the bot's HTTP listener: the OAuth callback Pinterest
// redirects users to after they authorize the bot, and a health check.
//
//	GET /oauth/callback?code=…&state=…   finish linking a Pinterest account
//	GET /oauth/callback?error=…&state=…  the user declined (access_denied)
//	GET /healthz                         200 "ok" while the process lives
//
// Every other path answers 404 and every other method 405.
//
// # The callback
//
// The state is consumed first (links.Store.ConsumeState): a forged,
// replayed or expired state gets a 400 page saying so, and Pinterest is
// not contacted. Then the code is exchanged for a token, the account is
// read with GET /user_account (its id is the key of the rate limit), its
// boards are listed, and links.Store.Link stores the token and makes the
// account the user's active one. An account with exactly one board gets
// it as its default board, unless it has one already: its first /pin
// needs no choice. The page says which board pins go to, or to choose
// one in /settings (also when the boards could not be listed, which does
// not stop the link). Until Link, the fresh token lives only in memory: should it
// rotate while the account is read, the Session keeps the new one, and that
// is what Link stores. Pinterest failing (5xx, timeout, rate limit) gets a
// 502 page asking the user to run /link again; nothing is linked then.
//
// Pages are small, plain HTML, with the username escaped, and are sent
// with Cache-Control: no-store and Referrer-Policy: no-referrer (the
// callback address holds the code). The handler never logs tokens, the
// code, or more than the first characters of the state; it logs Pinterest's
// x-pinterest-rid when a Pinterest call fails.
//
// # Usage
//
//	h, err := web.New(web.Config{Links: store, Pinterest: client, Log: log})
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
//	ReadTimeout        10 s  (GET requests have no body)
//	WriteTimeout       CallbackTimeout + 15 s
//	IdleTimeout        60 s
//	MaxHeaderBytes     16 KiB (the callback address is short)
package web
