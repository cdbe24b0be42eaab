package clusterrpc

import (
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	ms := time.Millisecond
	for i, tc := range []struct {
		t3       time.Time // client's answer instant
		t1, t2   time.Time // server's receipt and answer, by its clock
		off, rtt time.Duration
	}{
		// Same clocks, 10 ms each way, 5 ms in the handler.
		{t0.Add(25 * ms), t0.Add(10 * ms), t0.Add(15 * ms), 0, 20 * ms},
		// Server 2 s ahead.
		{t0.Add(25 * ms), t0.Add(2*time.Second + 10*ms), t0.Add(2*time.Second + 15*ms), 2 * time.Second, 20 * ms},
		// Server 1 s behind, asymmetric legs (1 ms out, 19 ms back): the
		// error is 9 ms, within rtt/2.
		{t0.Add(25 * ms), t0.Add(-time.Second + ms), t0.Add(-time.Second + 6*ms), -time.Second - 9*ms, 20 * ms},
		// A server whose clock ran fast during the call: no negative rtt.
		{t0.Add(2 * ms), t0.Add(ms), t0.Add(5 * ms), 2 * ms, 0},
	} {
		off, rtt := measure(t0, tc.t3, tc.t1.UnixNano(), tc.t2.UnixNano())
		if off != tc.off || rtt != tc.rtt {
			t.Errorf("case %d: measure = %v, %v, want %v, %v", i, off, rtt, tc.off, tc.rtt)
		}
	}
}

func TestWithinSkew(t *testing.T) {
	ms := time.Millisecond
	for i, tc := range []struct {
		offsets map[string]Offset
		max     time.Duration
		ok      bool
		worst   string
	}{
		{nil, time.Second, true, ""},
		{map[string]Offset{"a": {Offset: 900 * ms, RTT: 200 * ms}}, time.Second, true, "a"},
		{map[string]Offset{"a": {Offset: 900 * ms, RTT: 202 * ms}}, time.Second, false, "a"},
		{map[string]Offset{"a": {Offset: -950 * ms, RTT: 200 * ms}}, time.Second, false, "a"},
		{map[string]Offset{"a": {Offset: 100 * ms}, "b": {Offset: -300 * ms}, "c": {Offset: 200 * ms}}, time.Second, true, "b"},
		{map[string]Offset{"b": {Offset: 300 * ms}, "a": {Offset: -300 * ms}}, 200 * ms, false, "a"},
	} {
		ok, worst := WithinSkew(tc.offsets, tc.max)
		if ok != tc.ok || worst != tc.worst {
			t.Errorf("case %d: WithinSkew = %v, %q, want %v, %q", i, ok, worst, tc.ok, tc.worst)
		}
	}
}
