package actors

import "time"

// Observer learns what the engine does, for metrics (Config.Observer). Its
// methods are called on the engine's own goroutines, some on the path of
// every grant (Granted, Refused, Committed, Released), so they must be
// cheap, must not block and must be safe for simultaneous use: an atomic
// add, not a lookup by label. They must not call the engine.
type Observer interface {
	// Granted reports slots that one Reserve granted, once they are
	// durable and acknowledged (a grant whose write failed is not
	// reported: its caller was told nothing was granted). Jobs started
	// from the queue are reported too, one slot each.
	Granted(slots int)
	// Refused reports a Reserve that granted nothing, and why.
	Refused(why Refusal)
	// Committed reports a reservation turned into a pin by Commit (or by
	// the end of a queued job that pinned).
	Committed()
	// Released reports a reservation freed by Release (or by the end of a
	// queued job that did not pin).
	Released()
	// LeaseExpired reports reservations whose lease ran out unresolved:
	// each now counts as a pin made at its deadline.
	LeaseExpired(slots int)
	// Loaded reports how long an account actor took to load the account's
	// state: read its snapshot, jobs and journal events from the store and
	// replay the events.
	Loaded(took time.Duration)
	// Snapshotted reports how long a passivating account actor took to
	// write its final snapshot until it was durable.
	Snapshotted(took time.Duration)
	// JournalBatch reports one write of the journal's group commit: how
	// many account writes it carried, how long Store.Write took, and its
	// error (see persistence.WithBatchHook).
	JournalBatch(writes int, took time.Duration, err error)
}

// Refusal says why a Reserve granted nothing.
type Refusal uint8

const (
	// RefusedLimit: the account's window is full (under the rule in force
	// or an earlier one still counting).
	RefusedLimit Refusal = iota + 1
	// RefusedHeld: Pinterest asked to wait (Engine.Hold) and the hold is
	// in force.
	RefusedHeld
	// RefusedQueue: queued jobs wait for the free slots.
	RefusedQueue
)

// String returns "limit", "held" or "queue".
func (r Refusal) String() string {
	switch r {
	case RefusedLimit:
		return "limit"
	case RefusedHeld:
		return "held"
	case RefusedQueue:
		return "queue"
	}
	return "unknown"
}
