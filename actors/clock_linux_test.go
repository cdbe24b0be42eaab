package actors

import (
	"testing"
	"time"
)

// fakeClocks simulates the wall, monotonic and boot-time clocks of a
// machine, in nanoseconds.
type fakeClocks struct{ wall, mono, boot int64 }

func (c *fakeClocks) clocks() (int64, int64)  { return c.wall, c.mono }
func (c *fakeClocks) bootTime() (int64, bool) { return c.boot, true }

// run advances all three clocks by d, as time passes while awake.
func (c *fakeClocks) run(d time.Duration) {
	c.wall += int64(d)
	c.mono += int64(d)
	c.boot += int64(d)
}

// TestBootClockCountsSuspendAtOnce: the first read after a resume counts
// the whole suspend, even when the suspended time was measured just
// before it (a busy engine). A read that lagged by the suspend would stamp
// pins that long in the past, and free them that much early.
func TestBootClockCountsSuspendAtOnce(t *testing.T) {
	c := &fakeClocks{wall: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).UnixNano(), mono: int64(time.Second), boot: int64(time.Hour)}
	b := newBootClock(c.clocks, c.bootTime)
	start := b.elapsed()
	for range 5 { // busy: read every 10 ms, never 100 ms apart
		c.run(10 * time.Millisecond)
		b.elapsed()
	}
	// Suspended for 8 hours: the wall and boot-time clocks move on, the
	// monotonic clock does not.
	c.wall += int64(8 * time.Hour)
	c.boot += int64(8 * time.Hour)
	if got, want := time.Duration(b.elapsed()-start), 8*time.Hour+50*time.Millisecond; got != want {
		t.Fatalf("elapsed right after an 8 h suspend: %v, want %v", got, want)
	}
}

// TestBootClockIgnoresWallClockSteps: a wall clock set forward or back
// (NTP, an operator) changes nothing; the engine clock only moves with
// the monotonic and boot-time clocks, and never backwards.
func TestBootClockIgnoresWallClockSteps(t *testing.T) {
	c := &fakeClocks{wall: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC).UnixNano(), mono: int64(time.Second), boot: int64(time.Hour)}
	b := newBootClock(c.clocks, c.bootTime)
	start := b.elapsed()
	last := start
	for i, step := range []time.Duration{time.Hour, -3 * time.Hour, 200 * time.Millisecond, -time.Millisecond} {
		c.wall += int64(step)
		c.run(20 * time.Millisecond)
		e := b.elapsed()
		if e < last {
			t.Fatalf("step %d: elapsed went back from %d to %d", i, last, e)
		}
		last = e
	}
	if got, want := time.Duration(last-start), 80*time.Millisecond; got != want {
		t.Fatalf("elapsed after wall clock steps: %v, want %v (the monotonic time)", got, want)
	}
}

// BenchmarkClockNow: the cost of the engine clock, read once per actor
// message, and of time.Now under it.
func BenchmarkClockNow(b *testing.B) {
	c := NewRunningClock(time.Now().UnixMilli())
	b.Run("engine", func(b *testing.B) {
		var sink int64
		for i := 0; i < b.N; i++ {
			sink += c.Now()
		}
		_ = sink
	})
	b.Run("time.Now", func(b *testing.B) {
		var sink int64
		for i := 0; i < b.N; i++ {
			sink += time.Now().UnixNano()
		}
		_ = sink
	})
}
