// Package etcdstore keeps the rate-limit engine's state in etcd: a
// persistence.Store and persistence.RuleKeeper that the members of a
// pinbot cluster share, each writing the partitions it owns.
//
// # Usage
//
//	store, err := etcdstore.Open(ctx, cli, partition.NewKeys("/pinbot/"), etcdstore.Options{
//		Fenced: true,
//		Member: memberID,
//	})
//	if err != nil {
//		return err
//	}
//	defer store.Close() // before cli.Close()
//
// A member writes each account under the fence of the account's
// partition (persistence.AccountWrite.Fence, or Batch.Fence for all of
// them), and reads a partition it takes over with PartitionAccounts,
// PartitionJournaled, PartitionJobAccounts and PartitionHighWater.
//
// # Layout
//
// Every account lives in partition p = partition.Of(account, count),
// under keys.State(p) ("/pinbot/state/00042/"):
//
//	a/<account>\x00s              the snapshot
//	a/<account>\x00e/<seq>        a journal event; seq as 16 hex digits
//	j/<account>\x00<id>           a job; id as 16 hex digits
//	hw                            the partition's high-water mark
//
// Account IDs hold no NUL, so the NUL after one ends it: key order is the
// byte order of the account IDs, then of the seqs or job IDs, and one
// account's prefix never covers another's. A partition's state is one
// range; one account's state (snapshot and journal) is one prefix, read
// by Load in one request at one revision, as Jobs reads its jobs.
// Beside the partitions, under keys.Global():
//
//	rules                         the engine's rules (codec.AppendRules)
//	anchors/<member>              a member's clock anchor (codec.AppendAnchor)
//	hw                            the mark of batches of no account
//
// Snapshots, events and jobs are persistence/codec values behind a
// header of the store's own: a format byte (0x01) and the Unix second the
// key expires at as a uvarint (0: never). The high-water marks are a
// format byte (0x01) and the mark as 8 big-endian bytes with the sign bit
// flipped, so that etcd's comparison of values, which is bytewise, orders
// them as numbers: a write raises a mark with a nested transaction that
// puts it only if the key is missing or its value is smaller. HighWater
// is the largest of the global mark and every partition's.
//
// # Fencing
//
// A member owns partition p while it holds keys.Owner(p), created under
// its lease; the key's create revision is the partition's fence
// (partition.Fence). With Options.Fenced, the writes of partition p go in
// transactions that apply only if that key's create revision is still
// the fence's:
//
//	If(CreateRevision(owner(p)) == fence.Revision)
//	Then(the writes' puts and deletes..., raise hw of p)
//	Else(Get owner(p))
//
// A member that lost p (its lease ran out, the key was deleted, perhaps
// created again, even by itself) can no longer write there: a create
// revision is never reused. A refused transaction fails its writes with an
// error wrapping persistence.ErrFenced that names the partition, the
// fence and the owner key's current revision, read by the Else branch. A
// write whose fence is missing, malformed or of another partition is
// refused before any request. Without Options.Fenced, writes are
// unconditional and fences ignored.
//
// # Transactions
//
// A batch is grouped by partition, each partition's writes written in
// order in as few transactions as Options.MaxTxnOps and MaxTxnBytes
// allow, the partitions concurrently. A transaction holds whole
// AccountWrites of one fence and at most one AccountWrite per account
// (etcd refuses a transaction that writes a key twice); an AccountWrite
// too large for a transaction alone fails with ErrTooLarge. When a write
// fails, the later writes of its account in the batch are not attempted,
// so that a journal never has a gap, nor is the rest of its partition
// after a failure other than a stale fence. The outcome of each write is
// reported per index (persistence.PartialWriteError, WriteOutcome). An
// error of etcd itself, such as a timeout, leaves the transaction's
// outcome unknown: its writes are reported failed and may have been
// applied.
//
// # Expiry
//
// The keys an AccountWrite puts carry its ExpiresAt, each job its own,
// rounded up to a second as persistence's ExpirySecond does, in the
// value's header and through an etcd lease. Expiries are rounded up again
// to the end of a bucket (Options.LeaseBucket, a minute by default), and
// the keys of a bucket share one lease, granted when the bucket is first
// needed with a TTL of the bucket's end minus now plus a second, then
// reused by every write until the bucket's end passes: a key's lease
// never ends before its expiry, and a write rarely waits for a grant.
// Leases run on etcd's clock from their grant, and reads follow the
// engine's (Options.Now): they hide a key whose expiry passed even while
// its lease has yet to delete it. Keys already expired are not written,
// though the write's deletes (of the events its snapshot supersedes, of
// its dropped jobs) apply. A key expiring 0 or less is kept forever,
// with no lease; a lease etcd no longer knows is replaced and the
// transaction retried once.
//
// # What a write costs
//
// One AccountWrite is one put per event and per job, one put and one
// delete of a range for a snapshot (the events it supersedes), one delete
// per dropped job. Its keys take the prefix ("/pinbot/state/00042/a/",
// 22 bytes under "/pinbot/"), the account ID and 19 bytes; an event's
// value is the 6-byte header and its codec value, about 20 bytes. A
// transaction adds the fence's comparison and read of the owner key, and
// the high-water mark's nested transaction (three of MaxTxnOps: etcd
// counts a nested transaction's operations against its parent's limit).
// So a write of one event of an 18-byte account is one operation of about
// 100 bytes with etcd's encoding, and one transaction carries up to
// MaxTxnOps minus three such writes: 125 under etcd's default limit of
// 128. A scan reads Options.ScanPage keys per request, with their values
// (their expiry is there); a scan of every partition first reads a few
// keys of each, MaxTxnOps partitions per transaction, and merges them.
//
// # Errors
//
// Every call honours its context, and each etcd request is also bounded
// by Options.RequestTimeout, so that a call fails rather than wait for an
// unreachable cluster. A request etcd refuses for lack of space fails
// with an error wrapping ErrQuotaFull. After Close, calls fail with
// persistence.ErrClosed; Close waits for those in progress and leaves the
// etcd client open.
package etcdstore
