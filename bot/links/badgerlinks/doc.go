// Package badgerlinks is the links.Store of the program: users, accounts,
// tokens, OAuth states, users' and servers' settings, the digests'
// outbox, the pictures pinned and the pins made elsewhere that the engine
// counts, in a Badger database encrypted at
// rest with Badger's own encryption.
//
// # Usage
//
//	st, err := badgerlinks.Open(dir, badgerlinks.Options{EncryptionKey: key}, log)
//	defer st.Close()
//	var _ links.Store = st
//
// Backup and Restore copy the whole database in Badger's backup format,
// in the clear: the caller encrypts what it keeps.
//
// # Durability and concurrency
//
// Every write is one Badger transaction, fsynced before the method returns.
// Transactions that conflict with a concurrent one are retried, so
// concurrent Link, Unlink, SetActive and SetDefaultBoard calls never lose
// an update.
//
// # Time
//
// States are not given a Badger TTL (Badger's TTL follows the wall
// clock); PurgeStates removes expired ones. The records of pins made
// elsewhere are, as a bound: forgetting one early can only count a pin
// twice (see links.Observations).
//
// # Records
//
// Records are JSON objects carrying a version field "v" (currently 1),
// under these keys:
//
//	u/<user id>     the user's linked accounts, active account and settings
//	a/<account id>  username, default board, re-link flag, linking users
//	t/<account id>  the OAuth token and its grant generation
//	s/<sha256 hex>  an OAuth state: its user, expiry, /link interaction token and time
//	o/<account id>/<job id, 20 digits>  a digest line not yet delivered
//	e/<account id>  the pins the account made outside pinbot that the engine counts
//	h/<account id>/<board id>/<picture key>  a picture pinned: the pin's address and until when
//	g/<guild id>    a server's settings (its pin emoji); absent while all are defaults
//	g/<guild id>/...  reserved for what a server keeps beside them (its channels' rules)
//
// and m/grant-gen holds the last grant generation handed out. A record
// that cannot be decoded yields an error wrapping links.ErrCorrupt that
// names its key.
package badgerlinks
