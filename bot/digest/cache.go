package digest

import "container/list"

// lru is a map of at most max entries that forgets the least recently
// used one to make room. It is not safe for simultaneous use.
type lru[K comparable, V any] struct {
	max int
	m   map[K]*list.Element
	l   list.List // of lruEntry, most recently used first
}

type lruEntry[K comparable, V any] struct {
	k K
	v V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, m: make(map[K]*list.Element)}
}

// get returns k's value and marks it used.
func (c *lru[K, V]) get(k K) (V, bool) {
	e, ok := c.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.l.MoveToFront(e)
	return e.Value.(lruEntry[K, V]).v, true
}

// put sets k's value, forgetting the least recently used entry if the
// cache is full.
func (c *lru[K, V]) put(k K, v V) {
	if e, ok := c.m[k]; ok {
		e.Value = lruEntry[K, V]{k, v}
		c.l.MoveToFront(e)
		return
	}
	if c.l.Len() >= c.max {
		old := c.l.Back()
		delete(c.m, old.Value.(lruEntry[K, V]).k)
		c.l.Remove(old)
	}
	c.m[k] = c.l.PushFront(lruEntry[K, V]{k, v})
}

// remove forgets k.
func (c *lru[K, V]) remove(k K) {
	if e, ok := c.m[k]; ok {
		delete(c.m, k)
		c.l.Remove(e)
	}
}

func (c *lru[K, V]) len() int { return c.l.Len() }
