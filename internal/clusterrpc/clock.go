package clusterrpc

import (
	"sort"
	"time"
)

// Clock is the clock a member stamps its calls and answers with, and
// whose offset to its peers' clocks is measured. Differences between two
// of its readings are taken with Time.Sub, so a clock whose readings
// carry Go's monotonic time (time.Now) times round trips on it, and a
// step of the wall clock during a call does not distort the measure.
type Clock interface {
	Now() time.Time
}

// SystemClock is time.Now. The zero value is ready to use.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Offset is one measure of a peer's clock against this member's.
type Offset struct {
	// Addr is the address the peer was called at.
	Addr string
	// Offset is the peer's clock minus this member's clock. The true
	// offset lies within Offset ± RTT/2, if neither clock's rate drifted
	// during the call.
	Offset time.Duration
	// RTT is the round trip of the call, without the time the peer took
	// to answer.
	RTT time.Duration
	// At is this member's clock when the answer arrived.
	At time.Time
}

// Bound returns how far the peer's clock may be from this member's by
// this measure: |Offset| + RTT/2.
func (o Offset) Bound() time.Duration {
	off := o.Offset
	if off < 0 {
		off = -off
	}
	return off + o.RTT/2
}

// measure computes the offset and round trip of one call, NTP-style:
// sent at t0 and answered at t3 by the caller's clock, received at t1 and
// answered at t2 by the peer's (Unix nanoseconds). t3 is taken as t0 plus
// t3.Sub(t0), so that the caller's monotonic time measures the call.
//
//	offset = ((t1 - t0) + (t2 - t3)) / 2
//	rtt    = (t3 - t0) - (t2 - t1)
//
// A negative round trip (clocks running at different rates over a very
// short call) is taken as 0.
func measure(t0, t3 time.Time, t1, t2 int64) (offset, rtt time.Duration) {
	w0 := t0.UnixNano()
	w3 := w0 + int64(t3.Sub(t0))
	rtt = time.Duration((w3 - w0) - (t2 - t1))
	if rtt < 0 {
		rtt = 0
	}
	offset = time.Duration(((t1 - w0) + (t2 - w3)) / 2)
	return offset, rtt
}

// Recent returns the offsets measured at or after since.
func Recent(offsets map[string]Offset, since time.Time) map[string]Offset {
	out := make(map[string]Offset, len(offsets))
	for peer, o := range offsets {
		if !o.At.Before(since) {
			out[peer] = o
		}
	}
	return out
}

// WithinSkew reports whether every peer's clock is within maxSkew of this
// member's by its offset: |Offset| + RTT/2 ≤ maxSkew. worst names the
// peer with the largest bound (the first by name among equals), or is
// empty when offsets is. Pass it Recent offsets: an old measure says
// little of a clock now.
func WithinSkew(offsets map[string]Offset, maxSkew time.Duration) (ok bool, worst string) {
	peers := make([]string, 0, len(offsets))
	for peer := range offsets {
		peers = append(peers, peer)
	}
	sort.Strings(peers)
	var most time.Duration
	for _, peer := range peers {
		if b := offsets[peer].Bound(); worst == "" || b > most {
			worst, most = peer, b
		}
	}
	return worst == "" || most <= maxSkew, worst
}
