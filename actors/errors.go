package actors

import "errors"

// Errors returned by the Engine. They are wrapped with the account they
// concern; test with errors.Is.
var (
	// ErrClosed is returned once Close has begun.
	ErrClosed = errors.New("actors: engine closed")
	// ErrUnavailable means the journal could not make a grant durable (disk
	// full, store error, store closed, write fenced off): nothing was
	// granted; the store's error is wrapped. Reads still work.
	ErrUnavailable = errors.New("actors: journal unavailable, nothing granted")
	// ErrAccountState means an account's stored state could not be loaded
	// (unreadable or corrupt). Other accounts are unaffected.
	ErrAccountState = errors.New("actors: account state unreadable")
	// ErrUnknownReservation is returned by Commit and Release for a
	// reservation that is not pending: never granted, already resolved, or
	// turned into a pin when its lease ran out.
	ErrUnknownReservation = errors.New("actors: reservation not pending")
	// ErrInvalidAccount is returned for an account ID the store cannot hold.
	ErrInvalidAccount = errors.New("actors: invalid account id")
	// ErrInvalidOutcome is returned by Finish for an Outcome that says two
	// things at once (Absent with Done or Unknown).
	ErrInvalidOutcome = errors.New("actors: invalid job outcome")
	// ErrInvalidCount is returned by Reserve for n outside [1, MaxBatch].
	ErrInvalidCount = errors.New("actors: reserve count out of range")
	// ErrNoJobHandler is returned by Enqueue before jobs are served (see
	// Engine.ServeJobs), and by ServeJobs given no handler.
	ErrNoJobHandler = errors.New("actors: no job handler configured")
	// ErrJobsServed is returned by ServeJobs when jobs are served already.
	ErrJobsServed = errors.New("actors: jobs are served already")
	// ErrUnknownJob is returned by Finish for a job that is not running.
	ErrUnknownJob = errors.New("actors: job not running")
	// ErrActorFailed is returned to a request whose handling crashed the
	// account actor; supervision restarts the actor from its stored state.
	ErrActorFailed = errors.New("actors: account actor failed")
)

// ErrNotOwner is wrapped by the error of a request for an account this
// engine does not serve now (Config.Owner refused it: another member of
// the cluster owns it, or nobody does yet). Nothing was granted or
// loaded; the request may go to the account's owner.
var ErrNotOwner = errors.New("actors: account not served by this engine")
