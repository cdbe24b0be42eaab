// Package links keeps who linked which Pinterest account: Discord users,
// the Pinterest accounts each linked (one of them active), each account's
// OAuth token and default board, the single-use OAuth states of links in
// progress, the users' settings (what /pin does when an account is full),
// the servers' settings (Guilds: a server's own pin emoji), the digests'
// outbox, the pictures pinned to each board (History), and the pins each
// account made outside pinbot that the engine counts (Observations).
//
// The package holds the contract and no storage: the types (User,
// Account, Request, ObservedPin), the Store interface and the smaller ones
// it is made of (Directory, Tokens, States, Observations, History,
// Guilds), the errors every implementation returns, the limits on what a
// store accepts and the checks that apply them. Package badgerlinks is the implementation
// the program runs, in a Badger database encrypted at rest; package
// linkstest is the suite every implementation passes.
//
// The rate limit belongs to the Pinterest account (its user_account id),
// not to the Discord user: several users may link one account and share its
// limit, and one user may link several accounts. A Store keeps no
// rate-limit state: linking, unlinking and relinking never touch a limit.
// What it remembers of the pins made elsewhere only says which the engine
// counts already.
//
// # Usage
//
//	var st links.Store = ... // badgerlinks.Open(dir, badgerlinks.Options{EncryptionKey: key}, log)
//
//	// /link: bind a state to the Discord user (and the interaction, to
//	// tell them the outcome), send them to Pinterest.
//	state, err := st.NewLinkState(ctx, links.Request{User: userID, Interaction: tok, At: now}, now)
//	u := client.AuthCodeURL(state)
//
//	// OAuth callback: the state says who asked.
//	req, err := st.ConsumeLinkState(ctx, state, time.Now())
//	tok, err := client.Exchange(ctx, code)
//	// ... read the account id with GET /user_account, then
//	err = st.Link(ctx, req.User, links.Account{ID: id, Username: name}, tok)
//
//	// /pin: the user's active account and a session whose rotated tokens
//	// are saved at once.
//	usr, err := st.User(ctx, userID)
//	tok, gen, err := st.Grant(ctx, usr.Active)
//	s, err := pinterest.NewSession(tok, links.GrantSaver(st, usr.Active, gen))
//
// Call PurgeStates every few minutes to delete states nobody came back
// with.
//
// # Durability and concurrency
//
// Every write is durable before the method returns (Pinterest rotates
// refresh tokens and the previous one dies at once, so a token must never
// live only in memory). Concurrent Link, Unlink, SetActive and
// SetDefaultBoard calls never lose an update. A Store is safe for
// simultaneous use by multiple goroutines.
//
// # Time
//
// No method reads the wall clock: NewState, ConsumeState, PurgeStates and
// MarkObserved take the current time as an argument.
package links
