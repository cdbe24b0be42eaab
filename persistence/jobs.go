package persistence

// JobState is where a queued job stands.
type JobState uint8

const (
	// JobWaiting: the job waits for a slot of its account.
	JobWaiting JobState = 1
	// JobRunning: the job took reservation Slot and was handed out; it is
	// written in the same AccountWrite as the reservation's event, so a
	// job found running after a restart was handed out at most once, and
	// what became of it is unknown.
	JobRunning JobState = 2
	// JobDone: the job finished (Result says how) and is kept for a while
	// so its owner can see it.
	JobDone JobState = 3
)

// String names the state.
func (s JobState) String() string {
	switch s {
	case JobWaiting:
		return "waiting"
	case JobRunning:
		return "running"
	case JobDone:
		return "done"
	}
	return "unknown"
}

// Job is one unit of delayed work of an account: something the account's
// limit refused, stored until a slot frees. The store keeps jobs apart
// from the account's journal and snapshot, one value per job, and never
// lets them expire while waiting or running. Times are Unix milliseconds
// of the engine clock, except ExpiresAt (see below).
type Job struct {
	ID       uint64 // per account, from 1, increasing in queue order
	State    JobState
	Enqueued int64  // when it was queued
	Slot     uint64 // JobRunning, JobDone: the reservation it took (0: none)
	Deadline int64  // JobRunning: the end of that reservation's lease
	Finished int64  // JobDone: when it finished
	// ExpiresAt, when above 0, is the instant (Unix ms of the wall
	// clock, the one the store's TTL follows) after which the store may
	// delete the job; only done jobs carry one.
	ExpiresAt int64
	Payload   []byte // the work, opaque to the store and the engine
	Result    []byte // JobDone: the outcome, opaque likewise
}
