package schedule

import "errors"

// Errors returned by Submit. They are wrapped with the job or group they
// concern; test with errors.Is.
var (
	// ErrDuplicateID is returned for a job ID that is already waiting.
	ErrDuplicateID = errors.New("schedule: job ID already waiting")
	// ErrRuleChanged is returned when a job names a group that is in
	// memory under a different Rule.
	ErrRuleChanged = errors.New("schedule: group has a different rule")
	// ErrTooFar is returned when a job's ready time would fall after the
	// last instant Unix nanoseconds can hold (year 2262).
	ErrTooFar = errors.New("schedule: ready time out of range")
	// ErrRunning is returned by Runner.Run when the runner is already
	// running.
	ErrRunning = errors.New("schedule: runner already running")
)
