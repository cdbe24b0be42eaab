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
//   - GET /v5/pins and GET /v5/boards/{board_id}/pins: the token
//     owner's pins, or those on one of its boards, newest first, with
//     id, created_at (from the ledger, in whole seconds), board_id, link
//     and the other fields POST /v5/pins answers, in pages of page_size
//     (default 25, at most 250) followed by an opaque bookmark;
//   - GET /v5/boards: the token owner's boards, with page_size and
//     bookmark pagination;
//   - GET /v5/user_account: the token owner's id, username and profile
//     image (SetProfileImage).
//
// Each route requires the scopes its security names in Pinterest's OpenAPI
// description (POST /v5/pins boards:read, boards:write, pins:read and
// pins:write; the pin listings boards:read and pins:read; GET /v5/boards
// boards:read; GET /v5/user_account user_accounts:read) and answers 401
// with code 3 without them, as Pinterest does; a missing, unknown or
// expired access token gets 401 with code 2. Every answer carries an
// x-pinterest-rid header. Faults (Inject) model rate limits, spam blocks,
// expired tokens, server errors, slow and hung requests, requests held
// until the test releases them (HoldUntil), pins created behind an error
// answer, pins created after the client gave up (DelayedCreate), listings
// that fail (ListingFailed) or are answered late (ListingLate), and
// looping bookmarks; RejectImage models images Pinterest refuses.
// WithRateLimit makes it enforce a rate limit per account and endpoint,
// or per app, announced on every answer with x-ratelimit-limit,
// x-ratelimit-remaining and x-ratelimit-reset, and refused with 429 and
// Retry-After.
//
// # The ledger
//
// Every pin is kept with its creation time on the Server's clock: those
// made through POST /v5/pins, and those CreateDirect makes as the
// account's owner would in the Pinterest app, at a given instant.
// MaxInWindow audits an account's whole ledger, direct pins included;
// MaxSentInWindow only the pins made through the API. The listings show
// a pin only once it is listed: SetListingLag (or WithListingLag) delays
// every pin's appearance after its creation, and HidePin one pin's, as
// Pinterest's eventual consistency may.
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
//	_, err := c.CreatePin(ctx, s, pinterest.PinRequest{BoardID: "b1", ImageURL: u, Link: l, Mark: m})
//	srv.CreateDirect(pinteresttest.Pin{AccountID: "1001", BoardID: "b1", CreatedAt: t0})
//	pins, err := c.ListPins(ctx, s, pinterest.ListOptions{Since: t0})
//	n := srv.MaxInWindow("1001", 12*time.Hour)
package pinteresttest
