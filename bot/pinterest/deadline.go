package pinterest

import (
	"context"
	"fmt"
	"time"
)

// sendDeadlineKey is the context key of a sendDeadline.
type sendDeadlineKey struct{}

// sendDeadline bounds the requests of one call: by, on the clock now.
type sendDeadline struct {
	by  time.Time
	now func() time.Time
}

// WithSendDeadline returns a copy of ctx under which the Client sends a
// request that creates something (POST /pins), or a token refresh, only
// if it would end by by, on the clock now, at the latest: that is, only
// while at least Config.RequestTimeout is left. Otherwise the call fails
// with ErrNoTime and sends nothing more. Waits (for another caller's
// refresh) end with ctx as always: give ctx a deadline too.
//
// A caller that reserved a slot for a pin uses it to keep every request
// for the slot inside the reservation: by is the reservation's deadline
// less a margin, now the clock the deadline is on.
func WithSendDeadline(ctx context.Context, by time.Time, now func() time.Time) context.Context {
	return context.WithValue(ctx, sendDeadlineKey{}, sendDeadline{by: by, now: now})
}

// timeLeft fails with ErrNoTime when ctx carries a send deadline that a
// request for op, bounded by RequestTimeout, could end after.
func (c *Client) timeLeft(ctx context.Context, op string) error {
	d, ok := ctx.Value(sendDeadlineKey{}).(sendDeadline)
	if !ok {
		return nil
	}
	if left := d.by.Sub(d.now()); left < c.cfg.RequestTimeout {
		return fmt.Errorf("%w: pinterest: %s: %v left, less than the request timeout %v",
			ErrNoTime, op, max(left, 0).Round(time.Millisecond), c.cfg.RequestTimeout)
	}
	return nil
}
