// Package discorduser tells who a Discord user is, for the pages that
// confirm a link between a Discord user and a Pinterest account:
//
//   - a user by ID, read with the bot token (GET /users/{id}), to name on
//     the page the user who ran /link;
//   - the user a browser signs in as with Discord's OAuth2 authorization
//     code flow (scope identify: the authorization page, POST
//     /oauth2/token, then GET /users/@me with the access token), to check
//     that the person confirming is that user.
//
// Sign-in needs the application's OAuth2 client secret; without it the
// Client only reads users. The access token of a sign-in is used for the
// one GET /users/@me and then dropped.
//
// # Usage
//
//	c, err := discorduser.New(discorduser.Config{
//		Token:        botToken,
//		ClientSecret: secret, // "" disables SignIn
//		RedirectURL:  "https://pinbot.example/oauth/discord",
//	})
//	u, err := c.User(ctx, "80351110224678912")
//	page := c.AuthCodeURL(state) // send the browser there
//	// ... the redirect back carries code and state:
//	me, err := c.SignIn(ctx, code)
//
// A Client is safe for simultaneous use by multiple goroutines. It never
// logs, and its errors never hold the bot token, a code or an access
// token.
package discorduser
