package schedule

import (
	"fmt"
	"time"
)

// Kind is how a Rule counts calls.
type Kind uint8

const (
	// KindSlidingLog counts calls in any rolling period: a call at T counts
	// at every instant now with T > now-Per. See SlidingLog.
	KindSlidingLog Kind = iota + 1
	// KindFixedWindow counts calls in consecutive windows of length Per,
	// aligned to multiples of Per from the Unix epoch. See FixedWindow.
	KindFixedWindow
)

func (k Kind) String() string {
	switch k {
	case KindSlidingLog:
		return "sliding log"
	case KindFixedWindow:
		return "fixed window"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Rule is the limit of one group: at most Calls calls per Per, counted as
// Kind says. Rules are comparable values; a group keeps the Rule it was
// created with. The zero Rule is not valid.
type Rule struct {
	Kind  Kind
	Calls int           // calls allowed per Per, at least 1
	Per   time.Duration // the period, at least 1ns
}

// Discord's per-channel message rate, as commonly observed in the
// X-RateLimit-Limit and X-RateLimit-Reset-After headers of message routes:
// 5 messages per 5 seconds per channel. Discord documents that per-route
// limits exist but not their numbers, so these are defaults: pass another
// Rule when observations differ.
const (
	DiscordChannelMessages = 5
	DiscordChannelWindow   = 5 * time.Second
)

// DiscordChannel returns the default rule for messages sent to one Discord
// channel: at most DiscordChannelMessages in any span of
// DiscordChannelWindow, a sliding log. A fixed window with the same numbers
// (the seed's reservoir) would let 2·Calls calls through within one Per
// across a window boundary (Calls at the end of a window, Calls at the
// start of the next), which meets a 429 whenever Discord's own window is
// not aligned to ours; the sliding log never does, whatever the alignment.
func DiscordChannel() Rule {
	return Rule{Kind: KindSlidingLog, Calls: DiscordChannelMessages, Per: DiscordChannelWindow}
}

// Validate reports what is wrong with r, naming the field, or nil.
func (r Rule) Validate() error {
	switch {
	case r.Kind != KindSlidingLog && r.Kind != KindFixedWindow:
		return fmt.Errorf("schedule: rule Kind %v: want KindSlidingLog or KindFixedWindow", r.Kind)
	case r.Calls < 1:
		return fmt.Errorf("schedule: rule Calls %d: want at least 1", r.Calls)
	case r.Per < 1:
		return fmt.Errorf("schedule: rule Per %v: want at least 1ns", r.Per)
	}
	return nil
}

// NewPolicy returns a new policy enforcing r, with no calls recorded.
func (r Rule) NewPolicy() (Policy, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return newPolicy(r).(Policy), nil
}

func (r Rule) String() string {
	return fmt.Sprintf("%d per %v (%v)", r.Calls, r.Per, r.Kind)
}
