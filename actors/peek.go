package actors

import "context"

// Peek returns account's standing as Status does, read as Survey reads
// it: through its actor when the account is resident, in a request that
// does not count as a use, else straight from the store without
// spawning an actor. An operator's listing of every account thus neither
// grows the engine's memory nor keeps idle accounts in it. A store read
// may lag a request being served at that instant by a few milliseconds;
// nothing Peek returns may be used to grant anything. Peek fails with
// ErrClosed once the engine is closing.
func (e *Engine) Peek(ctx context.Context, account string) (Status, error) {
	if e.closed.Load() {
		return Status{}, ErrClosed
	}
	now := e.clock.Now()
	// The survey's request adds the account's pins to a timeline: one
	// bucket of one millisecond, which nobody reads.
	return e.surveyOne(ctx, account, now, newTimeline(now, 1, 1))
}
