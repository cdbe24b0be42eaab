// Package links keeps who linked which Pinterest account: Discord users,
// the Pinterest accounts each linked (one of them active), each account's
// OAuth token and default board, and the single-use OAuth states of links
// in progress. Everything lives in a Badger database encrypted at rest
// with Badger's own encryption.
//
// The rate limit belongs to the Pinterest account (its user_account id),
// not to the Discord user: several users may link one account and share its
// limit, and one user may link several accounts. This package stores no
// rate-limit state: linking, unlinking and relinking never touch a limit.
//
// # Usage
//
//	st, err := links.Open(dir, links.Options{EncryptionKey: key}, log)
//	defer st.Close()
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
//	s, err := pinterest.NewSession(tok, st.GrantSaver(usr.Active, gen))
//
// Call PurgeStates every few minutes to delete states nobody came back
// with.
//
// # Durability and concurrency
//
// Every write is one Badger transaction, fsynced before the method returns
// (Pinterest rotates refresh tokens and the previous one dies at once, so a
// token must never live only in memory). Transactions that conflict with a
// concurrent one are retried, so concurrent Link, Unlink, SetActive and
// SetDefaultBoard calls never lose an update. A Store is safe for
// simultaneous use by multiple goroutines.
//
// # Time
//
// No method reads the wall clock: NewState, ConsumeState and PurgeStates
// take the current time as an argument. States are not given a Badger TTL
// (Badger's TTL follows the wall clock); PurgeStates removes expired ones.
//
// # Records
//
// Records are JSON objects carrying a version field "v" (currently 1),
// under these keys:
//
//	u/<user id>     the user's linked accounts and active account
//	a/<account id>  username, default board, re-link flag, linking users
//	t/<account id>  the OAuth token
//	s/<sha256 hex>  an OAuth state: its user, expiry, /link interaction token and time
//
// A record that cannot be decoded yields an error wrapping ErrCorrupt that
// names its key.
package links
