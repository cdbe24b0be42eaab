package persistence

import (
	"context"
	"errors"
	"fmt"
)

// EventKind says what an Event records.
type EventKind uint8

const (
	// EventReserve records that Count slots, with reservation IDs
	// ID..ID+Count-1, were granted at At and must be resolved before Deadline.
	EventReserve EventKind = 1
	// EventCommit records that reservation ID became a pin at time At. A
	// reservation that had lapsed (its pin counted at its deadline) has
	// that pin moved forward to At. ID 0, which no reservation has,
	// records a pin the account made outside pinbot (actors.ObservedID).
	EventCommit EventKind = 2
	// EventRelease records that reservation ID's pin definitely did not happen.
	EventRelease EventKind = 3
	// EventHold records that nothing may be granted before At (Pinterest
	// said the account is rate limited until then).
	EventHold EventKind = 4
)

// Event is one entry of an account's journal. Times are Unix milliseconds
// of the engine clock.
type Event struct {
	Seq      uint64 // per account, strictly increasing from 1
	ID       uint64 // first reservation ID the event concerns
	At       int64  // EventReserve: reservation time; EventCommit: pin time
	Deadline int64  // EventReserve: lease deadline
	Count    uint32 // EventReserve: number of consecutive IDs granted
	Kind     EventKind
	// The fields are in this order so that an Event takes 40 bytes, not
	// 48: the store keeps recent events in memory.
}

// Pending is a reservation that was granted and not yet resolved.
type Pending struct {
	ID         uint64
	ReservedAt int64
	Deadline   int64
}

// Lapsed is a reservation whose lease ran out unresolved: it counts as a
// pin made at its Deadline, which is among the snapshot's Committed times.
// A Commit of it that comes later moves that pin forward to the Commit's
// instant.
type Lapsed struct {
	ID       uint64
	Deadline int64
}

// Snapshot is the whole state of one account after its journal event Seq.
type Snapshot struct {
	Seq       uint64    // last journal event folded in (0: none)
	NextID    uint64    // next reservation ID to hand out
	Committed []int64   // pin times still inside the window, ascending
	Pending   []Pending // unresolved reservations, ascending by ID
	// HoldUntil, when not zero, is the instant before which nothing may be
	// granted.
	HoldUntil int64
	// Lapsed are the reservations that expired into pins at their
	// deadlines and whose pins still count, ascending by ID.
	Lapsed []Lapsed
	// Rebuilt, when not zero, is the engine time as of which the
	// account's window was rebuilt from Pinterest's own listing
	// (actors.Engine.Rebuild): every pin made by the runs stopped by then
	// is among Committed. A restore's hold that began at or before it
	// (Rule.From) no longer binds the account.
	Rebuilt int64
}

// AccountWrite is everything one Batch writes for one account.
type AccountWrite struct {
	Account string
	// Events are appended to the account's journal.
	Events []Event
	// Snapshot, when not nil, replaces the account's snapshot and supersedes
	// its journal events with Seq up to Snapshot.Seq: they are deleted.
	Snapshot *Snapshot
	// ExpiresAt (Unix ms of the engine clock) is the instant after which the
	// account's whole state may be deleted: its window holds nothing from
	// then on. Every key the batch writes for the account carries it,
	// rounded up to a whole second; 0 or less means never. Keys written by
	// earlier batches keep the expiry they were written with, so the older
	// part of an account's state (its snapshot, its first journal events)
	// can expire while later events remain.
	ExpiresAt int64
	// Jobs are stored in place of the account's jobs with the same IDs,
	// with their own expiry (Job.ExpiresAt), after DropJobs.
	Jobs []Job
	// DropJobs are the IDs of jobs to delete.
	DropJobs []uint64
	// Fence is the fencing token of this account's writer, for a store
	// shared by several processes that each own some accounts (a cluster
	// member owns partitions of them): such a store applies the write only
	// while the token is current for the account, else fails it with an
	// error wrapping ErrFenced. Empty: Batch.Fence applies. A store that
	// one process owns ignores it. The store must not keep the slice.
	Fence []byte
}

// Batch is one durable write. Each AccountWrite in it is atomic: all of it
// lands, or none of it. The batch as a whole is atomic too unless it is too
// large for one store transaction; then it is split between AccountWrites
// (see badgerstore.Store.Write), which the journal's batch cap makes rare.
type Batch struct {
	Accounts []AccountWrite
	// HighWater, when larger than the stored value, replaces it: the newest
	// engine time any stored state refers to.
	HighWater int64
	// Fence is the writer's fencing token, opaque to everyone but the
	// store: a store shared by several processes, where one at a time may
	// own an account's state, refuses a batch whose token it holds stale
	// with an error wrapping ErrFenced, having applied none of it. A store
	// that one process owns ignores it. Empty: the writer claims no fence.
	// The store must not keep the slice after Write returns.
	Fence []byte
}

// ClockAnchor ties the engine's time to the machine's boot-time clock, so
// that an engine restarted on the same boot can measure the time that
// passed without trusting the wall clock: engine time is Engine plus the
// uptime elapsed since Uptime.
type ClockAnchor struct {
	// BootID names the boot the anchor was taken in; "" when unknown.
	BootID string
	// Uptime is the boot-time clock (time since boot, counting suspend)
	// at the anchor, in milliseconds.
	Uptime int64
	// Engine is the engine time at the anchor, Unix milliseconds.
	Engine int64
}

// Loaded is an account's stored state: its snapshot (zero if none) and the
// journal events written after it, in Seq order.
type Loaded struct {
	Snapshot Snapshot
	Events   []Event
}

// Store is where account state lives. Every method reports its failures;
// implementations are safe for simultaneous use by multiple goroutines.
// ctx carries the deadline and values of the call; a store whose calls may
// wait on something other than its own disk (a network, a lock) returns
// early with ctx's error when it ends, a store that does not may ignore it.
type Store interface {
	// Write applies b atomically. When it returns nil, b is durable (if the
	// store was opened durable) and every call that starts afterwards sees
	// it. A store may return before it has finished bookkeeping of its own
	// that nothing but its own reads depend on. A store that fences refuses
	// a stale b.Fence with an error wrapping ErrFenced.
	Write(ctx context.Context, b *Batch) error
	// Load returns the stored state of account. An account with nothing
	// stored (or whose state expired) loads as the zero Loaded and nil.
	// Corrupt state yields an error wrapping ErrCorrupt that names account.
	Load(ctx context.Context, account string) (Loaded, error)
	// Accounts calls fn for each account that has stored state, in key
	// order, without loading it; fn returning an error stops the scan.
	Accounts(ctx context.Context, fn func(account string) error) error
	// Journaled calls fn for each account that has journal events not
	// superseded by a snapshot (what a crash leaves behind), in key order;
	// fn returning an error stops the scan.
	Journaled(ctx context.Context, fn func(account string) error) error
	// Jobs returns the stored jobs of account, ascending by ID, those that
	// expired left out. Corrupt jobs yield an error wrapping ErrCorrupt that
	// names account.
	Jobs(ctx context.Context, account string) ([]Job, error)
	// JobAccounts calls fn for each account that has stored jobs, once, in
	// key order; fn returning an error stops the scan.
	JobAccounts(ctx context.Context, fn func(account string) error) error
	// HighWater returns the stored high-water mark (0 if none).
	HighWater(ctx context.Context) (int64, error)
	// Anchor returns the stored clock anchor (the zero ClockAnchor if
	// none).
	Anchor(ctx context.Context) (ClockAnchor, error)
	// SetAnchor stores a in place of the stored clock anchor; when it
	// returns nil, a is durable (if the store was opened durable).
	SetAnchor(ctx context.Context, a ClockAnchor) error
	// Close releases the store; later calls fail with ErrClosed.
	Close() error
}

// Errors shared by the stores.
var (
	// ErrClosed is returned by a Store used after Close.
	ErrClosed = errors.New("persistence: store closed")
	// ErrCorrupt is wrapped by errors about unreadable stored state.
	ErrCorrupt = errors.New("persistence: corrupt state")
	// ErrInvalidAccount is returned for an account ID that cannot be stored:
	// empty, longer than MaxAccountLen bytes, or containing a NUL byte.
	ErrInvalidAccount = errors.New("persistence: invalid account id")
	// ErrFenced is wrapped by the error of a Write a fencing store refused
	// because the batch's Fence is stale: another writer owns the state
	// now. Nothing of the batch was applied.
	ErrFenced = errors.New("persistence: write fenced off")
)

// PartialWriteError is the error of a Write that applied some of its
// batch's AccountWrites and failed others, each for its own reason (a
// store shared by several processes writes each owner's part in its own
// transaction). Failed maps the index in Batch.Accounts of every write
// that was not applied to why; every other AccountWrite of the batch was
// applied, as was the batch's HighWater unless HighWaterErr is set.
type PartialWriteError struct {
	Failed       map[int]error
	HighWaterErr error
}

func (e *PartialWriteError) Error() string {
	var first error
	for _, err := range e.Failed {
		first = err
		break
	}
	if first == nil {
		first = e.HighWaterErr
	}
	return fmt.Sprintf("persistence: %d account writes of the batch failed, e.g. %v", len(e.Failed), first)
}

// Unwrap returns the errors of the failed writes, so that errors.Is finds
// ErrFenced in a batch that any fence refused.
func (e *PartialWriteError) Unwrap() []error {
	errs := make([]error, 0, len(e.Failed)+1)
	for _, err := range e.Failed {
		errs = append(errs, err)
	}
	if e.HighWaterErr != nil {
		errs = append(errs, e.HighWaterErr)
	}
	return errs
}

// WriteOutcome returns what err, returned by a Write, means for the
// batch's AccountWrite at index i: nil when it was applied.
func WriteOutcome(err error, i int) error {
	if err == nil {
		return nil
	}
	var pe *PartialWriteError
	if errors.As(err, &pe) {
		return pe.Failed[i]
	}
	return err
}

// MaxAccountLen is the longest account ID, in bytes, a Store accepts.
const MaxAccountLen = 128

// ValidAccount reports whether account can be stored.
func ValidAccount[T ~string | ~[]byte](account T) bool {
	if len(account) == 0 || len(account) > MaxAccountLen {
		return false
	}
	for i := 0; i < len(account); i++ {
		if account[i] == 0 {
			return false
		}
	}
	return true
}

// CheckAccount returns nil if account can be stored, else an error
// wrapping ErrInvalidAccount that quotes at most a little more than
// MaxAccountLen bytes of it.
func CheckAccount(account string) error {
	if ValidAccount(account) {
		return nil
	}
	return fmt.Errorf("%w %.*q (%d bytes)", ErrInvalidAccount, MaxAccountLen+1, account, len(account))
}

// Validate checks the parts of b that would corrupt a store's key space:
// b is not nil, every account ID is valid (the error wraps
// ErrInvalidAccount), no event has Seq 0 and no job ID 0. Stores call it before
// writing anything of b.
func (b *Batch) Validate() error {
	if b == nil {
		return errors.New("persistence: write: nil batch")
	}
	for i := range b.Accounts {
		aw := &b.Accounts[i]
		if err := CheckAccount(aw.Account); err != nil {
			return err
		}
		for j := range aw.Events {
			if aw.Events[j].Seq == 0 {
				return fmt.Errorf("persistence: account %q: write: event %d has seq 0", aw.Account, j)
			}
		}
		for j := range aw.Jobs {
			if aw.Jobs[j].ID == 0 {
				return fmt.Errorf("persistence: account %q: write: job %d has id 0", aw.Account, j)
			}
		}
	}
	return nil
}

// JobExpirySecond returns the Unix second at which j's key expires:
// ExpiresAt rounded up; 0 (never) when ExpiresAt is 0 or less.
func JobExpirySecond(j *Job) uint64 {
	return expirySecond(j.ExpiresAt)
}

// ExpirySecond returns the Unix second at which the keys w writes expire:
// ExpiresAt rounded up, so that state never expires before the instant the
// engine asked for; 0 (never) when ExpiresAt is 0 or less.
func (w *AccountWrite) ExpirySecond() uint64 { return expirySecond(w.ExpiresAt) }

func expirySecond(ms int64) uint64 {
	if ms <= 0 {
		return 0
	}
	s := ms / 1000
	if ms%1000 != 0 {
		s++
	}
	return uint64(s)
}
