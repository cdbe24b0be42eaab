package clusterrpc

import (
	"container/heap"
	"sync"
	"time"
)

// replayCache admits each request's timestamp and nonce at most once.
//
// A request is admitted when its timestamp lies in [floor, now+window]
// and its nonce is not remembered. floor is the newest clock reading seen
// minus window, raised further when the cache is full (below). It never
// decreases, even if the clock is set back, so a nonce forgotten because
// its timestamp fell below floor can never be admitted again: every
// request with that timestamp is stale from then on. The cache forgets
// nonces in timestamp order, exactly those below floor.
//
// When the cache holds max nonces, admitting one more forgets the oldest
// and raises floor above its timestamp: the window narrows under a flood
// rather than letting a replay in or refusing fresh requests.
//
// A replayCache is safe for simultaneous use.
type replayCache struct {
	mu     sync.Mutex
	window int64 // nanoseconds
	max    int
	newest int64 // newest clock reading, Unix nanoseconds
	floor  int64 // lowest timestamp admitted
	seen   map[[nonceSize]byte]struct{}
	byTime nonceHeap
}

func newReplayCache(window time.Duration, max int) *replayCache {
	return &replayCache{
		window: int64(window),
		max:    max,
		seen:   make(map[[nonceSize]byte]struct{}),
	}
}

// admit decides on a request stamped ts with nonce at the server's clock
// reading now (Unix nanoseconds): "" when admitted (the nonce is
// remembered), else ReasonStale or ReasonReplay.
func (c *replayCache) admit(now, ts int64, nonce [nonceSize]byte) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now > c.newest {
		c.newest = now
		c.raise(now - c.window)
	}
	if ts < c.floor || ts > now+c.window {
		return ReasonStale
	}
	if _, ok := c.seen[nonce]; ok {
		return ReasonReplay
	}
	for len(c.seen) >= c.max {
		c.raise(c.byTime[0].ts + 1)
	}
	if ts < c.floor {
		return ReasonStale
	}
	c.seen[nonce] = struct{}{}
	heap.Push(&c.byTime, seenNonce{ts, nonce})
	return ""
}

// raise moves floor up to f, forgetting the nonces below it.
func (c *replayCache) raise(f int64) {
	if f <= c.floor {
		return
	}
	c.floor = f
	for len(c.byTime) > 0 && c.byTime[0].ts < f {
		n := heap.Pop(&c.byTime).(seenNonce)
		delete(c.seen, n.nonce)
	}
}

// size returns how many nonces are remembered.
func (c *replayCache) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

type seenNonce struct {
	ts    int64
	nonce [nonceSize]byte
}

// nonceHeap is a min-heap of nonces by timestamp.
type nonceHeap []seenNonce

func (h nonceHeap) Len() int           { return len(h) }
func (h nonceHeap) Less(i, j int) bool { return h[i].ts < h[j].ts }
func (h nonceHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nonceHeap) Push(x any)        { *h = append(*h, x.(seenNonce)) }
func (h *nonceHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}
