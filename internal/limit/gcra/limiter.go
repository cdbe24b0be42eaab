package gcra

import (
	"container/list"
	"sync"
	"time"

	"github.com/pinbot/pinbot/internal/limit"
)

var _ limit.Policy = (*Limiter)(nil)

// Limiter applies one Rate to many keys; it is a limit.Policy. The zero
// value is not usable; use NewLimiter. A Limiter is safe for simultaneous
// use by multiple goroutines.
type Limiter struct {
	rate     Rate
	interval int64 // ns per unit
	tau      int64 // ns of burst: burst × interval
	burst    int
	maxKeys  int

	mu   sync.Mutex
	keys map[string]*list.Element // of *entry
	lru  list.List                // most recently used first
}

// entry is one key's state.
type entry struct {
	key string
	tat int64 // theoretical arrival time, ns of monotonic time (see AllowN)
}

// NewLimiter returns a Limiter applying r to each key, keeping at most
// maxKeys keys (at least 1). It panics if r is not valid (see
// Rate.Validate): check configuration first.
func NewLimiter(r Rate, maxKeys int) *Limiter {
	if err := r.Validate(); err != nil {
		panic(err)
	}
	l := &Limiter{
		rate:     r,
		interval: int64(r.Interval()),
		burst:    r.burst(),
		maxKeys:  max(maxKeys, 1),
		keys:     make(map[string]*list.Element),
	}
	l.tau = int64(l.burst) * l.interval
	return l
}

// Rate returns the Limiter's rate.
func (l *Limiter) Rate() Rate { return l.rate }

// Allow is shorthand for AllowN(key, now, 1).
func (l *Limiter) Allow(key string, now time.Duration) limit.Decision { return l.AllowN(key, now, 1) }

// AllowN decides whether key may spend n units at now, and spends them if
// so. now is an instant of monotonic time: the time elapsed since an
// origin fixed for the Limiter's life (see Since), which never goes back;
// every call on a Limiter reads the same clock. A cost above the burst is
// taken as the burst (it could never be allowed otherwise); n < 1 is
// taken as 1.
func (l *Limiter) AllowN(key string, now time.Duration, n int) limit.Decision {
	n = min(max(n, 1), l.burst)
	t := int64(now)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forget(t)

	el, ok := l.keys[key]
	tat := t
	if ok {
		tat = max(el.Value.(*entry).tat, t)
	}
	next := tat + int64(n)*l.interval
	res := limit.Decision{Limit: l.burst}
	if allowAt := next - l.tau; allowAt > t {
		res.RetryAfter = time.Duration(allowAt - t)
		res.Remaining = int((t + l.tau - tat) / l.interval)
		res.ResetAfter = time.Duration(tat - t)
		if ok {
			l.lru.MoveToFront(el)
		}
		return res
	}
	res.Allowed = true
	res.Remaining = int((t + l.tau - next) / l.interval)
	res.ResetAfter = time.Duration(next - t)
	if ok {
		el.Value.(*entry).tat = next
		l.lru.MoveToFront(el)
		return res
	}
	if len(l.keys) >= l.maxKeys {
		oldest := l.lru.Back()
		delete(l.keys, oldest.Value.(*entry).key)
		l.lru.Remove(oldest)
	}
	l.keys[key] = l.lru.PushFront(&entry{key: key, tat: next})
	return res
}

// forget drops, from the least recently used end, the keys whose TAT is
// not after t: they are as good as never seen.
func (l *Limiter) forget(t int64) {
	for {
		back := l.lru.Back()
		if back == nil || back.Value.(*entry).tat > t {
			return
		}
		delete(l.keys, back.Value.(*entry).key)
		l.lru.Remove(back)
	}
}

// Len returns how many keys the Limiter keeps.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// Since returns a clock of instants for AllowN: the time now has moved
// since Since was called, as Time.Sub measures it. The readings of
// time.Now carry the monotonic clock's, which Sub uses, so Since(time.Now)
// runs on Go's monotonic clock, whatever is done to the wall clock. On a
// clock whose readings have none, it is the difference of their times.
//
// The origin is the first reading, taken at the first call rather than
// by Since itself, so that a clock that cannot be read yet (an engine
// still starting) may be given.
func Since(now func() time.Time) func() time.Duration {
	var once sync.Once
	var origin time.Time
	return func() time.Duration {
		t := now()
		once.Do(func() { origin = t })
		return t.Sub(origin)
	}
}
