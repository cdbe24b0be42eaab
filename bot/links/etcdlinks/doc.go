// Package etcdlinks is the links.Store of a pinbot cluster: users,
// accounts, tokens, OAuth states, settings, the digests' outbox, the
// pictures pinned and the pins made elsewhere, in etcd, shared by every
// member, and the servers' settings. It passes linkstest.TestStore, as badgerlinks does on one
// machine.
//
// # Usage
//
//	st, err := etcdlinks.Open(ctx, cli, partition.NewKeys("/pinbot/"),
//		etcdlinks.Options{EncryptionKey: key}, log)
//	defer st.Close() // then cli.Close()
//	var _ links.Store = st
//
// Every member opens its own Store over the same keys, with the same
// key. Unlike badgerlinks there is no Backup or Restore (a snapshot of
// etcd, etcdctl snapshot save, holds the store, sealed) and no
// links.ErrLocked (members share the store by design).
//
// # Layout
//
// Every key is under partition.Keys.Links(), followed by:
//
//	m/key-check           a known text sealed with the key: Open refuses another key
//	m/grant-gen           the last grant generation Link handed out (decimal, in the clear)
//	u/<user id>           the user's linked accounts, active account and settings
//	a/<account id>        username, default board, re-link flag, linking users
//	t/<account id>        the OAuth token and its grant generation
//	s/<sha256 hex>        an OAuth state: its user, expiry, /link interaction token and time
//	su/<user id>/<expiry, Unix ms, 20 digits>/<sha256 hex>  the user's states, oldest first (empty value)
//	o/<account id>/<job id, 20 digits>  a digest line not yet delivered, and the member that keeps it
//	e/<account id>        the pins the account made outside pinbot that the engine counts
//	h/<account id>/<board id>/<picture key>  a picture pinned: the pin's address and until when
//	g/<guild id>          a server's settings (its pin emoji); absent while all are defaults
//	g/<guild id>/...      reserved for what a server keeps beside them (its channels' rules)
//
// Values are JSON records with a version field "v" (currently 1),
// sealed. A record that does not open or decode yields an error wrapping
// links.ErrCorrupt that names its etcd key.
//
// # Sealing
//
// Every record is sealed with AES-GCM under Options.EncryptionKey (16, 24
// or 32 bytes): a format byte, a random 96-bit nonce, the ciphertext and
// its tag. The record's key, relative to the prefix, is the additional
// data, so a value copied under another key (one account's token to
// another) does not open. What etcd holds in the clear is the keys: ids
// of users, accounts and boards, pictures' keys and job ids; states only
// as their SHA-256, so that reading etcd does not yield a usable state.
// The first Open stores m/key-check; an Open whose key cannot open it
// fails with links.ErrEncryptionKey.
//
// # Compare-and-swap
//
// Every method that reads and then writes does so in one etcd
// transaction conditional on what it read: each key's mod revision
// (create revision where only its presence matters, as the account a
// token is saved for), or, for a range such as a user's states, that no
// key in it changed after the revision read. The transaction's other
// branch reads the same keys again, so an attempt that lost a race costs
// one request, and the method tries again on what it found, after a
// short random pause, up to 100 attempts. The keys one change touches
// are written in that one transaction: Link writes the user, the
// account, its token and the grant counter; Unlink the user and the
// account, deleting the token with the account's last link. A state is
// consumed by deleting it on condition that its mod revision is the one
// read, so that of members racing on it one wins. A method returns once
// its transaction is committed by etcd's quorum: a rotated token is
// never only in memory.
//
// # Expiry
//
// States, pictures pinned and pins made elsewhere are put under etcd
// leases, one per time bucket of their deadline (a minute for states, an
// hour for pins made elsewhere, a day for pictures), granted by each
// member when first needed and shared by every record of the bucket.
// A lease's time to live reaches the end of its bucket, in whole
// seconds rounded up, measured on Options.Now from before the grant: it
// ends no earlier than any deadline put under it. etcd renews leases at a
// change of leader, which can only make them longer. Leases only clear
// etcd: every read checks the deadline against the time the caller
// passes. A write whose lease is gone (etcd lost or revoked it) is done
// again under a new one.
//
// # Scans
//
// Users, AllAccounts, AllAccountUsers, Outbox().Lines and PurgeStates
// read their range a page at a time, every page at the revision of the
// first, so that they see one snapshot; a scan that outlives etcd's
// compaction of that revision fails.
//
// # Requests
//
// Each etcd request is bounded by Options.RequestTimeout and the call's
// context: with etcd unreachable a call fails, it does not wait. What
// each method costs, when nothing races it and its lease is held:
//
//	User, Account, AccountUsers, Token, Grant, Unobserved, Ping:
//		1 read
//	Accounts:
//		2 reads (the user, then their accounts at that revision)
//	Link, Unlink, SetActive, SetQueueWhenFull, SetDefaultBoard,
//	MarkRelinkNeeded, MarkGrantRelinkNeeded, SaveToken, SaveGrantToken,
//	NewLinkState, ConsumeLinkState, MarkObserved:
//		1 read + 1 transaction (the read alone when nothing changes)
//	PinnedBefore:
//		1 read per 128 keys
//	RememberPinned, Outbox().Delete:
//		1 transaction per 128 keys
//	Outbox().Put:
//		1 transaction (create the key if absent, else read it); a
//		member's, over a gone member's line: + 1 transaction to take it
//	MemberOutbox().Claim:
//		1 read of the member keys + 1 read per 256 lines + 1
//		transaction per line taken
//	Users, AllAccounts, AllAccountUsers, Outbox().Lines:
//		1 read per 256 keys
//	PurgeStates:
//		1 read per 256 states + 1 transaction per 64 expired ones
//
// plus a lease grant per bucket and member, and a transaction per lost
// race.
package etcdlinks
