package discordiotest

import "context"

// Op names an operation of discordio.API, for Inject and Calls.
type Op string

// The operations of discordio.API.
const (
	OpRespond      Op = "Respond"
	OpOriginal     Op = "Original"
	OpEditOriginal Op = "EditOriginal"
	OpFollowup     Op = "Followup"
	OpMessage      Op = "Message"
	OpChannel      Op = "Channel"
	OpGuild        Op = "Guild"
	OpRoles        Op = "Roles"
	OpMember       Op = "Member"
	OpOpenDM       Op = "OpenDM"
	OpSend         Op = "Send"
	OpSetCommands  Op = "SetCommands"
	OpGatewayBot   Op = "GatewayBot"
)

// Ops are every operation, in the order of discordio.API.
var Ops = []Op{
	OpRespond, OpOriginal, OpEditOriginal, OpFollowup,
	OpMessage, OpChannel, OpGuild, OpRoles, OpMember,
	OpOpenDM, OpSend, OpSetCommands, OpGatewayBot,
}

// Always, as Inject's count, applies a fault to every call until Clear.
const Always = -1

// Fault is how a call goes wrong. The zero Fault fails the call with
// context.DeadlineExceeded before it takes effect: a request that timed
// out before Discord saw it.
type Fault struct {
	// Err is what the call returns: a *discordio.Error for an answer
	// (a 429 with RetryAfter, a 5xx), any other error for a transport
	// failure. Nil means context.DeadlineExceeded.
	Err error
	// Hang makes the call answer not at all: it returns its context's
	// error once the context ends, and Err is not used.
	Hang bool
	// Lost makes the call take effect before it fails: Discord did what
	// was asked, and its answer was lost.
	Lost bool
	// Hung, if not nil, receives a value from each call that starts to
	// hang (after taking effect, with Lost), so that a test knows the
	// call is waiting. The call waits for the receive or its context's
	// end.
	Hung chan<- struct{}
}

// injected is a fault waiting for its calls; n < 0 is every call.
type injected struct {
	n     int
	fault Fault
}

// Inject makes the next n calls of op fail with fault, after the faults
// injected before for op; n = Always makes every later call fail until
// Clear. A call whose context has already ended fails with its context's
// error and takes no fault.
func (f *Fake) Inject(op Op, n int, fault Fault) {
	if n == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[op] = append(f.faults[op], &injected{n: n, fault: fault})
}

// Clear removes the faults injected for op that calls have not taken.
func (f *Fake) Clear(op Op) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.faults, op)
}

// Calls is how many calls of op the Fake received, failed ones included.
func (f *Fake) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// begin counts a call of op and, if take, takes the next fault for it.
func (f *Fake) begin(op Op, take bool) (Fault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	q := f.faults[op]
	if !take || len(q) == 0 {
		return Fault{}, false
	}
	in := q[0]
	if in.n > 0 {
		in.n--
		if in.n == 0 {
			f.faults[op] = q[1:]
		}
	}
	return in.fault, true
}

// call runs one request of op: it counts it, answers a done context with
// its error (the request is never sent), and otherwise applies the next
// fault injected for op, if any, around do, which takes effect.
func (f *Fake) call(ctx context.Context, op Op, do func() error) error {
	err := ctx.Err()
	fault, ok := f.begin(op, err == nil)
	if err != nil {
		return err
	}
	if !ok {
		return do()
	}
	if fault.Lost {
		_ = do()
	}
	if fault.Hang {
		if fault.Hung != nil {
			select {
			case fault.Hung <- struct{}{}:
			case <-ctx.Done():
			}
		}
		<-ctx.Done()
		return ctx.Err()
	}
	if fault.Err != nil {
		return fault.Err
	}
	return context.DeadlineExceeded
}
