// Package cluster runs a pinbot process as one member of a cluster that
// shares its accounts through etcd: who the members are, which member
// owns each partition (package partition), and when a member may serve a
// partition and write its state. The gateway's shards are leased by the
// same protocol (ShardConfig: owner keys under owners/shards/, a
// rendezvous weight of their own), beside an IdentifyLimiter that spaces
// the members' IDENTIFYs and ShardSessions that carry a shard's session
// to its next holder.
//
// # Usage
//
//	m, err := cluster.Start(ctx, cluster.Config{
//		Client: cli, Keys: partition.NewKeys("/pinbot/"),
//		Member: "host-a", Addr: "10.0.0.1:8080", Partitions: partition.DefaultCount,
//		Log: log,
//		Acquired: func(p partition.ID, f partition.Fence) error { /* load p's state */ },
//		Lost:     func(p partition.ID) { /* stop p's actors, no writes */ },
//		Release:  func(ctx context.Context, p partition.ID) error { /* flush, passivate */ },
//	})
//	// per request: fence, err := m.Serving(account); ErrNotOwner: forward
//	// to m.OwnerOf(account); ErrMoved: retry shortly.
//	defer m.Close(ctx)
//
// Start returns an error when etcd cannot be reached before ctx ends, or
// when the member's id is in use (ErrMemberExists: a previous run's lease
// lives on for up to a TTL); the caller retries with a backoff.
//
// # The protocol
//
// A member grants itself a lease of Config.LeaseTTL and puts its member
// key (Keys.Member: its address, start time and partition count, as JSON)
// under it, only if no key of that id lives. It keeps the lease alive
// with one KeepAliveOnce every third of the TTL, from a loop of its own,
// so that it knows when each keep-alive was sent.
//
// Every member watches the member and owner keys (one watch, so that it
// sees both in etcd's order; a watch that ends, by compaction, a lost
// leader or a lost connection, is replaced after a fresh read of both).
// The desired owner of partition p is the live member of highest
// rendezvous weight for p (FNV-1a of its id and p, mixed): a member that
// joins or leaves moves only the partitions it wins or held, and every
// member computes the same from the same keys.
//
//   - Acquire: a member that is p's desired owner and sees no owner key
//     creates it in a transaction, If(CreateRevision == 0) Then(Put(id,
//     lease)). The key's create revision is p's fence
//     (partition.Fence): the state store applies a write only while p's
//     owner key still has that create revision. Then Acquired(p, fence)
//     loads p's state, then the member serves p. A member that finds
//     the key taken does not try again before its view has reached the
//     revision etcd answered at, and each round of the member's loop
//     plans from every watch event received by then: members starting
//     together would otherwise send the same refused transactions again
//     at each event.
//   - Hand over: a member holding p whose desired owner is another member
//     (one joined) stops serving p (ErrMoved), calls Release (flushes
//     p's writes, passivates its actors), then deletes the key,
//     If(CreateRevision == fence). The desired owner sees the delete and
//     acquires. Handovers run beside the member's loop, so that a slow
//     one holds back no acquisition (a dead member's partitions), and
//     within a bound (two TTLs): past it Release's context ends, p is
//     lost and its key deleted. p is not acquired again here before its
//     handover's callbacks are over.
//   - Leave: Close deletes the member key first, so that the others pick
//     new owners without it, hands every partition over, then revokes
//     the lease.
//   - Die: the lease expires, its member and owner keys vanish in one
//     revision, and the desired owners among the living acquire.
//
// # Why an owner stops before its lease can expire
//
// etcd renews a lease for its full TTL when its leader receives the
// keep-alive, which is after the member sent it: acknowledged, a
// keep-alive sent at s proves that the lease, and every owner key under
// it, lives until s + TTL at least; a new leader only extends leases
// (with etcd's lease checkpointing off, its default: a checkpoint taken
// before a renewal could shorten a lease across a leader change). So
// the member serves until s + TTL − Margin (Config.Margin, a fifth of the
// TTL by default), measured on its own monotonic clock, and stops by a
// timer of that clock when the instant passes without a newer
// acknowledgement: it does not wait for etcd or the network to say
// anything. Fence and Serving read the clock on every call, so they
// refuse from the deadline on even before the timer has fired. No other
// member can create the key before the lease expires, so two members
// never serve one partition at once; Margin covers the clocks' rates, a
// decision taken just before the deadline and the Lost calls. The fence
// covers what the deadline cannot: a write sent before the deadline and
// applied after a new owner took over is refused by the store.
//
// After a lapse the member may find its lease alive (a keep-alive is
// acknowledged again): it deletes its own old owner keys and acquires
// them again, with new fences, so that no write of the old tenure can land
// after the new one loaded its state. If etcd says the lease is gone, the
// member registers under a new lease and acquires again.
//
// # Pause, partition, leader loss
//
//   - A paused process (SIGSTOP, a long stall, a suspended machine): on
//     waking, its clock has run on (CLOCK_BOOTTIME counts a suspend), so
//     Fence and Serving refuse at once and Lost follows; meanwhile its
//     lease has expired and the desired owners have taken its
//     partitions. Its keep-alive then finds the lease gone, and it joins
//     again under a new one.
//   - A member cut off from etcd stops serving at its deadline, and its
//     partitions stay unserved until its lease expires and others take
//     them: the cluster fails closed, never double. A minority of etcd's
//     members cut off from the leader is the same for the members that
//     reach only them (keep-alives need the leader; watches require one).
//   - The etcd leader lost: keep-alives fail until a new leader is
//     elected (an election timeout or two); a member whose deadline
//     passes meanwhile lapses and acquires again once its keep-alive is
//     acknowledged. The new leader extends every lease, so nothing
//     expires early.
//
// # Callbacks
//
// For one tenure of a partition, Acquired comes first; then either Lost,
// or Release, followed by Lost if Release returns an error (its context
// ends if the deadline passes, or the handover's bound). Callbacks of
// different partitions run concurrently, Config.Parallel at a time. Lost must not block; it may run on the deadline timer's
// goroutine.
package cluster
