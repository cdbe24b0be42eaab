package actors

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// Monday 12:00 UTC, the spec's example.
var monday = time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)

func ms(t time.Time) int64 { return t.UnixMilli() }

func testWindow(tb testing.TB, limit int, width time.Duration) *Window {
	tb.Helper()
	w, err := NewWindow(limit, width)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// windowStep is one line of a step table: optionally record a pin at rec,
// then check what the window says at now.
type windowStep struct {
	rec      time.Time // zero: record nothing
	now      time.Time
	count    int
	allow    bool
	nextFree time.Time
}

func runWindow(t *testing.T, w *Window, steps []windowStep) {
	t.Helper()
	for i, s := range steps {
		if !s.rec.IsZero() {
			w.Record(ms(s.rec))
		}
		now := ms(s.now)
		if got := w.Count(now); got != s.count {
			t.Errorf("step %d: Count(%v) = %d want %d", i, s.now.Format(time.DateTime), got, s.count)
		}
		if got := w.Allow(now); got != s.allow {
			t.Errorf("step %d: Allow(%v) = %v want %v", i, s.now.Format(time.DateTime), got, s.allow)
		}
		if got := w.NextFree(now); got != ms(s.nextFree) {
			t.Errorf("step %d: NextFree(%v) = %v want %v", i, s.now.Format(time.DateTime), time.UnixMilli(got).UTC(), s.nextFree)
		}
	}
}

func TestWindowSpecExample(t *testing.T) {
	// Limit 1 so that "counts" and "blocks" are the same question.
	w := testWindow(t, 1, 12*time.Hour)
	tuesday := monday.Add(12 * time.Hour) // 00:00 Tuesday
	runWindow(t, w, []windowStep{
		{rec: monday, now: monday, count: 1, allow: false, nextFree: tuesday},
		{now: monday.Add(6 * time.Hour), count: 1, allow: false, nextFree: tuesday},
		{now: tuesday.Add(-time.Millisecond), count: 1, allow: false, nextFree: tuesday},
		{now: tuesday, count: 0, allow: true, nextFree: tuesday},
		{now: tuesday.Add(time.Minute), count: 0, allow: true, nextFree: tuesday.Add(time.Minute)},
	})
}

func TestWindowBoundary(t *testing.T) {
	w := testWindow(t, 2, 12*time.Hour)
	t0 := monday
	t1 := t0.Add(time.Millisecond)
	end0 := t0.Add(12 * time.Hour)
	runWindow(t, w, []windowStep{
		{rec: t0, now: t0, count: 1, allow: true, nextFree: t0},
		{rec: t1, now: t1, count: 2, allow: false, nextFree: end0},
		// One millisecond before t0 expires both count.
		{now: end0.Add(-time.Millisecond), count: 2, allow: false, nextFree: end0},
		// At exactly t0+12h the first is out, the second still in.
		{now: end0, count: 1, allow: true, nextFree: end0},
		{now: end0.Add(time.Millisecond), count: 0, allow: true, nextFree: end0.Add(time.Millisecond)},
	})
}

func TestWindowRollingExpiry(t *testing.T) {
	const limit = 100
	w := testWindow(t, limit, 12*time.Hour)
	// A full window: pin i at monday + i minutes.
	for i := 0; i < limit; i++ {
		w.Record(ms(monday.Add(time.Duration(i) * time.Minute)))
	}
	full := monday.Add(2 * time.Hour)
	var steps []windowStep
	steps = append(steps, windowStep{now: full, count: limit, allow: false, nextFree: monday.Add(12 * time.Hour)})
	// Capacity comes back one pin at a time, each exactly 12h after it.
	for i := 0; i < limit; i++ {
		at := monday.Add(12*time.Hour + time.Duration(i)*time.Minute)
		steps = append(steps,
			windowStep{now: at.Add(-time.Millisecond), count: limit - i, allow: i > 0, nextFree: nextFreeAt(i, at)},
			windowStep{now: at, count: limit - i - 1, allow: true, nextFree: at},
		)
	}
	runWindow(t, w, steps)
}

func nextFreeAt(expired int, at time.Time) time.Time {
	if expired > 0 {
		return at.Add(-time.Millisecond)
	}
	return at
}

func TestWindowFreeAtK(t *testing.T) {
	w := testWindow(t, 5, time.Hour)
	for i := 0; i < 5; i++ {
		w.Record(ms(monday.Add(time.Duration(i) * time.Minute)))
	}
	now := ms(monday.Add(10 * time.Minute))
	for k := 1; k <= 5; k++ {
		want := ms(monday.Add(time.Hour + time.Duration(k-1)*time.Minute))
		if got := w.FreeAt(now, k); got != want {
			t.Errorf("FreeAt(k=%d) = %v want %v", k, time.UnixMilli(got).UTC(), time.UnixMilli(want).UTC())
		}
	}
	if got := w.FreeAt(now, 6); got != Never {
		t.Errorf("FreeAt(k=6) = %d want Never", got)
	}
	// After two expire, two are free now; a third needs the third pin to go.
	later := ms(monday.Add(time.Hour + time.Minute))
	if got := w.FreeAt(later, 2); got != later {
		t.Errorf("FreeAt(later, 2) = %d want now %d", got, later)
	}
	if got, want := w.FreeAt(later, 3), ms(monday.Add(time.Hour+2*time.Minute)); got != want {
		t.Errorf("FreeAt(later, 3) = %d want %d", got, want)
	}
}

func TestWindowOutOfOrderAndEviction(t *testing.T) {
	w := testWindow(t, 3, time.Hour)
	base := ms(monday)
	for _, d := range []int64{30, 10, 20} {
		w.Record(base + d)
	}
	if got := fmt.Sprint(w.Times(nil, base)); got != fmt.Sprint([]int64{base + 10, base + 20, base + 30}) {
		t.Fatalf("Times = %s, want ascending", got)
	}
	// Full ring: a newer pin evicts the oldest; an older one is dropped.
	w.Record(base + 40)
	w.Record(base + 5)
	if got, want := fmt.Sprint(w.Times(nil, base)), fmt.Sprint([]int64{base + 20, base + 30, base + 40}); got != want {
		t.Fatalf("Times = %s want %s", got, want)
	}
	if w.Newest() != base+40 {
		t.Fatalf("Newest = %d want %d", w.Newest(), base+40)
	}
}

func ExampleWindow() {
	w, err := NewWindow(100, 12*time.Hour)
	if err != nil {
		fmt.Println(err)
		return
	}
	pin := time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 100; i++ {
		w.Record(pin.UnixMilli())
	}
	now := pin.Add(time.Hour).UnixMilli()
	fmt.Println(w.Count(now), w.Allow(now))
	fmt.Println(time.UnixMilli(w.NextFree(now)).UTC().Format(time.DateTime))
	// Output:
	// 100 false
	// 2026-11-17 00:00:00
}

func BenchmarkWindowAllow(b *testing.B) {
	w := testWindow(b, DefaultLimit, DefaultWindow)
	base := ms(monday)
	for i := 0; i < DefaultLimit; i++ {
		w.Record(base + int64(i)*60_000)
	}
	now := base + 6*3600_000
	b.ReportAllocs()
	b.ResetTimer()
	ok := false
	for i := 0; i < b.N; i++ {
		ok = w.Allow(now + int64(i&1023))
	}
	_ = ok
}

func BenchmarkWindowRecord(b *testing.B) {
	w := testWindow(b, DefaultLimit, DefaultWindow)
	base := ms(monday)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.Record(base + int64(i))
	}
}

// TestWindowLongSpans: over records spanning months, in and out of order,
// with gaps around the 32-bit offset range, the window answers at every
// instant from its newest pin on as a log of every pin would: the pins
// that count are the newest ones after the cutoff, at most limit of them.
func TestWindowLongSpans(t *testing.T) {
	for _, width := range []time.Duration{time.Millisecond, 12 * time.Hour, 10 * 24 * time.Hour, MaxWindow} {
		for seed := uint64(0); seed < 20; seed++ {
			t.Run(fmt.Sprintf("width=%v/seed=%d", width, seed), func(t *testing.T) {
				checkLongSpans(t, width, seed)
			})
		}
	}
}

func checkLongSpans(t *testing.T, width time.Duration, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	const limit = 7
	w := testWindow(t, limit, width)
	wd := width.Milliseconds()
	var all []int64
	cursor := int64(1_700_000_000_000) + r.Int64N(1<<40) // the clock
	newest := int64(0)                                   // the newest pin
	steps := []int64{1, 1000, wd, wd + 1, maxSpan - 1, maxSpan, maxSpan + 1, 1<<32 - 1, 1 << 32, 1<<32 + 1, 3 << 32}
	for i := 0; i < 400; i++ {
		var rec int64
		switch r.IntN(4) {
		case 0: // older than the clock, by up to and beyond the offset range
			rec = cursor - steps[r.IntN(len(steps))] + r.Int64N(3) - 1
		default:
			cursor += steps[r.IntN(len(steps))] * int64(r.IntN(2))
			rec = cursor
		}
		w.Record(rec)
		all = append(all, rec)
		if len(all) == 1 || rec > newest {
			newest = rec
		}
		for _, ahead := range []int64{0, 1, wd - 1, wd, wd + 1, maxSpan} {
			now := newest + ahead
			live := liveOf(all, now-wd, limit)
			if got := w.Count(now); got != len(live) {
				t.Fatalf("record %d (%d): Count(newest+%d) = %d, want %d", i, rec, ahead, got, len(live))
			}
			if got := w.Times(nil, now); !slices.Equal(got, live) {
				t.Fatalf("record %d (%d): Times(newest+%d) = %v, want %v", i, rec, ahead, got, live)
			}
			for k := 1; k <= limit; k++ {
				want := now
				if need := k - (limit - len(live)); need > 0 {
					want = live[need-1] + wd
				}
				if got := w.FreeAt(now, k); got != want {
					t.Fatalf("record %d (%d): FreeAt(newest+%d, %d) = %d, want %d", i, rec, ahead, k, got, want)
				}
			}
		}
		if got := w.Newest(); got != newest {
			t.Fatalf("record %d: Newest %d, want %d", i, got, newest)
		}
	}
}

// liveOf returns, ascending, the newest pins of all after cutoff, at most
// limit of them.
func liveOf(all []int64, cutoff int64, limit int) []int64 {
	var live []int64
	for _, t := range all {
		if t > cutoff {
			live = append(live, t)
		}
	}
	slices.Sort(live)
	if len(live) > limit {
		live = live[len(live)-limit:]
	}
	return live
}

// TestWindowFullRingMemory: a full window of the default limit takes 400
// bytes of timestamps, the 416-byte allocation class.
func TestWindowFullRingMemory(t *testing.T) {
	w := testWindow(t, DefaultLimit, DefaultWindow)
	for i := int64(0); i < DefaultLimit; i++ {
		w.Record(ms(monday) + i)
	}
	if got := cap(w.ts) * int(unsafe.Sizeof(w.ts[0])); got != 400 {
		t.Fatalf("full ring holds %d bytes, want 400", got)
	}
}

// TestWindowOffsetBoundaries: records at and around the edges of the
// 32-bit offset range (base+MaxUint32, newest-maxSpan), into a ring that is
// full and wrapped (head != 0) when the rebase happens; every answer from
// the newest pin on matches a log of every pin.
func TestWindowOffsetBoundaries(t *testing.T) {
	for _, width := range []time.Duration{time.Millisecond, 12 * time.Hour, MaxWindow - time.Millisecond, MaxWindow} {
		wd := width.Milliseconds()
		t0 := ms(monday)
		seqs := [][]int64{
			// full (limit 3), wrapped, then a record one past base+MaxUint32
			{t0, t0 + 1, t0 + 2, t0 + 3, t0 + 3 + maxSpan},
			{t0, t0 + 1, t0 + 2, t0 + 3, t0 + 1 + maxSpan, t0 + 2 + maxSpan},
			// exactly base+MaxUint32 (no rebase), then one more
			{t0, t0 + maxSpan - 1, t0 + maxSpan, t0 + maxSpan + 1},
			// an old record exactly at and just below newest-maxSpan
			{t0 + maxSpan, t0, t0 - 1, t0 + 1},
			{t0 + 4*maxSpan, t0 + 3*maxSpan, t0 + 3*maxSpan - 1, t0 + 3*maxSpan + 1, t0 + 4*maxSpan - 1},
			// jumps of 2^32 and more, then back inside the window
			{t0, t0 + 1<<32, t0 + 1<<32 - wd + 1, t0 + 3<<32, t0 + 3<<32 - 1},
		}
		for si, seq := range seqs {
			w := testWindow(t, 3, width)
			var all []int64
			newest := seq[0]
			for ri, rec := range seq {
				w.Record(rec)
				all = append(all, rec)
				newest = max(newest, rec)
				for _, now := range []int64{newest, newest + 1, newest + wd - 1, newest + wd} {
					live := liveOf(all, now-wd, 3)
					if got := w.Times(nil, now); !slices.Equal(got, live) {
						t.Fatalf("width %v seq %d rec %d: Times(%d) = %v, log %v", width, si, ri, now, got, live)
					}
					for k := 1; k <= 3; k++ {
						want := now
						if need := k - (3 - len(live)); need > 0 {
							want = live[need-1] + wd
						}
						if got := w.FreeAt(now, k); got != want {
							t.Fatalf("width %v seq %d rec %d: FreeAt(%d,%d) = %d, want %d", width, si, ri, now, k, got, want)
						}
					}
				}
				if w.Newest() != newest {
					t.Fatalf("width %v seq %d: Newest %d want %d", width, si, w.Newest(), newest)
				}
			}
		}
	}
}

// TestNewWindowRejectsBadSizes: a limit below 1, or a width outside 1ms to
// MaxWindow (beyond which 32-bit offsets could not hold every pin that
// counts), is refused with an error naming it.
func TestNewWindowRejectsBadSizes(t *testing.T) {
	for _, c := range []struct {
		limit int
		width time.Duration
		want  string
	}{
		{0, time.Hour, "limit"},
		{1, time.Millisecond - 1, "width"},
		{1, MaxWindow + time.Millisecond, "width"},
	} {
		if w, err := NewWindow(c.limit, c.width); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewWindow(%d, %v) = %v, %v; want an error naming the %s", c.limit, c.width, w, err, c.want)
		}
	}
	if _, err := NewWindow(1, MaxWindow); err != nil {
		t.Errorf("NewWindow(1, MaxWindow): %v", err)
	}
}

// TestWindowSmallRingInside: the first smallRing pins are held inside the
// Window (no allocation, so no object for the collector), the next one
// moves them to an array of their own, and every answer stays right.
func TestWindowSmallRingInside(t *testing.T) {
	w := testWindow(t, DefaultLimit, DefaultWindow)
	t0 := ms(monday)
	var i int64
	if a := testing.AllocsPerRun(1, func() {
		w.init(DefaultLimit, DefaultWindow) // in place: AllocsPerRun calls twice
		i = 0
		for range smallRing {
			w.Record(t0 + i)
			i++
		}
	}); a != 0 {
		t.Fatalf("recording %d pins allocated %v times, want 0", smallRing, a)
	}
	if &w.ts[0] != &w.small[0] {
		t.Fatal("the ring is not the window's own")
	}
	w.Record(t0 + i)
	if &w.ts[0] == &w.small[0] {
		t.Fatal("the ring stayed inside the window past smallRing pins")
	}
	if got, want := w.Times(nil, t0+i), []int64{t0, t0 + 1, t0 + 2, t0 + 3, t0 + 4}; !slices.Equal(got, want) {
		t.Fatalf("times %v want %v", got, want)
	}
}
