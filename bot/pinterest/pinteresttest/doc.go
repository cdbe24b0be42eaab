// Package pinteresttest provides a stand-in for Pinterest's API v5, in the
// manner of net/http/httptest: a real HTTP server on a loopback address
// speaking Pinterest's wire protocol, with accounts, boards, tokens and
// pins kept in memory.
//
// It serves:
//
//   - GET /oauth/: the authorization page, which grants the signed-in
//     account at once and redirects to redirect_uri with code and state,
//     so that the OAuth flow runs without a browser; it grants the
//     scopes asked for, or only some of them (SetGrantedScopes);
//   - POST /v5/oauth/token: authorization_code and refresh_token grants,
//     with HTTP Basic client authentication and rotating refresh tokens (a
//     refresh token works once; using it again answers 400 with code 283);
//   - POST /v5/pins: image_url pins on the token owner's boards, each
//     recorded with the Server's clock;
//   - GET /v5/boards: the token owner's boards, with page_size and
//     bookmark pagination;
//   - GET /v5/user_account: the token owner's id, username and profile
//     image (SetProfileImage).
//
// Each route requires the scopes its security names in Pinterest's OpenAPI
// description (POST /v5/pins boards:read, boards:write, pins:read and
// pins:write; GET /v5/boards boards:read; GET /v5/user_account
// user_accounts:read) and answers 403 with code 3 without them. Every
// answer carries an x-pinterest-rid header. Faults (Inject) model
// rate limits, spam blocks, expired tokens, server errors, slow and hung
// requests, requests held until the test releases them (HoldUntil), pins
// created behind an error answer, pins created after the client gave up
// (DelayedCreate), and looping bookmarks; RejectImage models images
// Pinterest refuses. WithRateLimit makes it enforce a rate limit per
// account and endpoint, or per app, announced on every answer with
// x-ratelimit-limit, x-ratelimit-remaining and x-ratelimit-reset, and
// refused with 429 and Retry-After.
//
// # Usage
//
//	clk := pinteresttest.NewClock(t0)
//	srv := pinteresttest.NewServer(pinteresttest.WithClock(clk.Now))
//	defer srv.Close()
//	cred := srv.AddAccount("1001", "alice", pinteresttest.Board{ID: "b1", Name: "Cats"})
//	c, _ := pinterest.New(pinterest.Config{
//		ClientID: srv.ClientID(), ClientSecret: srv.ClientSecret(),
//		RedirectURL: "http://localhost/cb",
//		APIBase: srv.APIBase(), AuthURL: srv.AuthURL(), Now: clk.Now,
//	})
//	s, _ := pinterest.NewSession(cred.Token(), save)
//	_, err := c.CreatePin(ctx, s, pinterest.PinRequest{BoardID: "b1", ImageURL: u})
//	n := srv.MaxInWindow("1001", 12*time.Hour)
package pinteresttest
