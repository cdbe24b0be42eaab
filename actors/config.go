package actors

import (
	"fmt"
	"time"
)

// Config tunes the engine. Start from DefaultConfig.
type Config struct {
	// Limit is the number of pins allowed per account in any Window.
	Limit int
	// Window is the length of the rolling window, from a millisecond to
	// MaxWindow (about 24.8 days).
	Window time.Duration
	// Lease is how long a reservation may stay neither committed nor
	// released. After it, the reservation counts as a pin made at the end of
	// its lease. Keep every Pinterest call well under it.
	Lease time.Duration
	// IdleTimeout is how long an account actor stays in memory without a
	// request before it snapshots its state and stops.
	IdleTimeout time.Duration
	// ParkAfter is how long an account actor stays without a request
	// before it parks: once its state is stored, the actor hands the
	// state to the registry, in memory the collector does not walk, and
	// stops; the next request spawns an actor from that state, without
	// reading the store (see docs/design.md, "Memory and the collector").
	// The account stays resident until IdleTimeout. 0 never parks.
	ParkAfter time.Duration
	// SnapshotEvery is how many journal events an account accumulates before
	// its state is snapshotted and those events are deleted.
	SnapshotEvery int
	// TTLMargin is added to the instant an account's window has fully
	// expired before its stored state may be deleted. The store's TTL
	// follows the wall clock, so the margin absorbs the wall clock running
	// ahead of the engine's clock.
	TTLMargin time.Duration
	// MaxJournalBatch is the most account writes one store transaction
	// carries (persistence.DefaultMaxBatch if 0).
	MaxJournalBatch int
	// JournalPipeline is the most journal batches being written at once
	// (persistence.WithPipeline), for a store whose Write may run
	// concurrently and waits on a network, such as etcd's; 0 or 1: one
	// at a time. A store that settles its writes (the disk stores)
	// writes one at a time whatever it says.
	JournalPipeline int
	// Clock, when not nil, replaces the engine clock (tests, simulations);
	// it is still never let run behind the newest instant in the store.
	// When nil the engine runs a RunningClock on Uptime (see New).
	Clock Clock
	// Uptime, when not nil, replaces the system's boot-time clock that
	// the engine clock runs on and carries across restarts on the same
	// boot (tests); it is unused when Clock is set.
	Uptime Uptime
	// Wall, when not nil, replaces the wall clock (Unix ms) that the
	// store's TTL follows (tests, with persistencetest.NewMemStore's clock).
	Wall func() int64
	// Recover, when true, makes New start the background replay of the
	// accounts left with journal events (see Engine.Recover).
	Recover bool
	// CheckpointEvery is how often, when the store shares its journal
	// between accounts (Checkpointer), the engine snapshots the
	// accounts that keep more than CheckpointKeep journal records alive;
	// 0 turns it off.
	CheckpointEvery time.Duration
	// CheckpointKeep is how many of the newest journal records a
	// checkpoint leaves alone.
	CheckpointKeep int
	// MaxQueue is the most jobs an account may have waiting or running
	// (see Engine.Enqueue); 0 queues nothing.
	MaxQueue int
	// KeepDone is how many done jobs each account keeps for their owner
	// to see, and KeepDoneFor for how long at most (by the wall clock,
	// which the store's TTL follows).
	KeepDone    int
	KeepDoneFor time.Duration
	// Observer, when not nil, learns what the engine does, for metrics
	// (see Observer).
	Observer Observer
	// OnJob, when not nil, runs the account's queued jobs: it is called on
	// a goroutine of its own with each job as it starts (its slot reserved
	// durably), and with each job a previous run left running
	// (Job.Recovered). Every job handed out must be ended with
	// Engine.Finish. Without OnJob, jobs are served once Engine.ServeJobs
	// is called, and queued only from then on.
	OnJob func(Job)
	// Fence, when not empty, is the fencing token every write of the
	// engine carries (persistence.Batch.Fence), for a store that several
	// processes share and that lets one at a time write: a write it
	// refuses as fenced off (persistence.ErrFenced) fails closed like any
	// failed write, and nothing is granted. Empty for a store the engine
	// has to itself. The engine keeps the slice; do not change it.
	Fence []byte
	// Owner, when not nil, says whether this engine may serve account
	// now, for an engine that is one member of a cluster owning some of
	// the accounts: it returns the fencing token of the account's
	// writes (persistence.AccountWrite.Fence), or an error (the cluster's
	// "not owner") that every request for an account not served here
	// gets, before any actor is spawned or state loaded. It is asked when
	// an account's actor is spawned and at its load; the actor carries the
	// token for its life, so a member that loses the account must stop
	// its actors (Engine.Drop): their writes would be fenced off. It must
	// be cheap and must not block. Nil: the engine serves every account.
	Owner func(account string) (fence []byte, err error)
}

// DefaultConfig returns the production settings: 100 pins per 12 hours,
// 5-minute leases, actors idle for 10 minutes are passivated.
func DefaultConfig() Config {
	return Config{
		Limit:         DefaultLimit,
		Window:        DefaultWindow,
		Lease:         5 * time.Minute,
		IdleTimeout:   10 * time.Minute,
		ParkAfter:     time.Minute,
		SnapshotEvery: 16,
		TTLMargin:     24 * time.Hour,
		Recover:       true,

		CheckpointEvery: time.Minute,
		CheckpointKeep:  4096,

		MaxQueue:    1000,
		KeepDone:    50,
		KeepDoneFor: 7 * 24 * time.Hour,
	}
}

// Validate reports the first setting that is out of range, naming it.
func (c Config) Validate() error {
	switch {
	case c.Limit < 1 || c.Limit > 1<<16:
		return fmt.Errorf("actors: Config.Limit %d out of range [1, 65536]", c.Limit)
	case c.Window < time.Millisecond:
		return fmt.Errorf("actors: Config.Window %v shorter than 1ms", c.Window)
	case c.Window > MaxWindow:
		return fmt.Errorf("actors: Config.Window %v longer than %v", c.Window, MaxWindow)
	case c.Lease < time.Millisecond:
		return fmt.Errorf("actors: Config.Lease %v shorter than 1ms", c.Lease)
	case c.IdleTimeout < time.Millisecond:
		return fmt.Errorf("actors: Config.IdleTimeout %v shorter than 1ms", c.IdleTimeout)
	case c.ParkAfter < 0:
		return fmt.Errorf("actors: Config.ParkAfter %v is negative", c.ParkAfter)
	case c.SnapshotEvery < 1:
		return fmt.Errorf("actors: Config.SnapshotEvery %d must be at least 1", c.SnapshotEvery)
	case c.TTLMargin < 0:
		return fmt.Errorf("actors: Config.TTLMargin %v is negative", c.TTLMargin)
	case c.CheckpointEvery < 0:
		return fmt.Errorf("actors: Config.CheckpointEvery %v is negative", c.CheckpointEvery)
	case c.CheckpointKeep < 0:
		return fmt.Errorf("actors: Config.CheckpointKeep %d is negative", c.CheckpointKeep)
	case c.MaxQueue < 0:
		return fmt.Errorf("actors: Config.MaxQueue %d is negative", c.MaxQueue)
	case c.KeepDone < 0:
		return fmt.Errorf("actors: Config.KeepDone %d is negative", c.KeepDone)
	case c.KeepDoneFor < 0:
		return fmt.Errorf("actors: Config.KeepDoneFor %v is negative", c.KeepDoneFor)
	case c.MaxJournalBatch < 0:
		return fmt.Errorf("actors: Config.MaxJournalBatch %d is negative", c.MaxJournalBatch)
	case c.JournalPipeline < 0:
		return fmt.Errorf("actors: Config.JournalPipeline %d is negative", c.JournalPipeline)
	}
	return nil
}
