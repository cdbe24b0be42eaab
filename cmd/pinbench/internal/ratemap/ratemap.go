// Package ratemap keeps one golang.org/x/time/rate token bucket per key
// behind a sharded map: the in-process limiter a Go service would pick
// first, used by pinbench as the in-process speed ceiling. A token bucket
// is neither exact over a sliding window nor durable: it is the price of
// its speed.
package ratemap

import (
	"hash/maphash"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

const shards = 256

// Map holds a limiter per key, created on first use. It is safe for
// simultaneous use by multiple goroutines.
type Map struct {
	limit  rate.Limit
	burst  int
	seed   maphash.Seed
	shards [shards]shard
}

type shard struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
	_  [40]byte // keep shards' locks off each other's cache lines
}

// New returns a Map whose limiters allow limit events per window on
// average and bursts of limit: rate.Every(window/limit), burst limit.
func New(limit int, window time.Duration) *Map {
	m := &Map{limit: rate.Every(window / time.Duration(limit)), burst: limit, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].m = make(map[string]*rate.Limiter)
	}
	return m
}

// AllowAt reports whether key may have one event at now, and takes it if
// so.
func (m *Map) AllowAt(key string, now time.Time) bool {
	sh := &m.shards[maphash.String(m.seed, key)%shards]
	sh.mu.Lock()
	l := sh.m[key]
	if l == nil {
		l = rate.NewLimiter(m.limit, m.burst)
		sh.m[key] = l
	}
	sh.mu.Unlock()
	return l.AllowN(now, 1)
}

// Len returns the number of keys seen.
func (m *Map) Len() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
