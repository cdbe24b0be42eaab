// Package child holds what pinbench needs to run helper processes (a
// redis-server, a re-executed pinbench): attributes that make them die
// with pinbench, and a bounded record of what they printed for error
// messages.
package child

import (
	"sync"
)

// Tail is an io.Writer keeping the last bytes written to it. It is safe
// for simultaneous use by multiple goroutines.
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTail returns a Tail keeping the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

// Write keeps the end of p; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the bytes kept.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Capture is an io.Writer keeping the first and the last bytes written to
// it: a crashing Go program says what happened at the start of its
// output, and what it was doing at the end. It is safe for simultaneous
// use by multiple goroutines.
type Capture struct {
	mu      sync.Mutex
	headMax int
	head    []byte
	tail    *Tail
	cut     bool // bytes were dropped between head and tail
}

// NewCapture returns a Capture keeping the first head and the last tail
// bytes.
func NewCapture(head, tail int) *Capture {
	return &Capture{headMax: head, tail: NewTail(tail)}
}

// Write keeps what fits at the head, and the end in the tail; it never
// fails.
func (c *Capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		if len(c.tail.String())+len(p) > c.tail.max {
			c.cut = true
		}
		c.tail.Write(p)
	}
	return n, nil
}

// Head returns the first bytes written.
func (c *Capture) Head() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.head)
}

// String returns the head and the tail, marking the cut between them.
func (c *Capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return string(c.head) + "\n[...]\n" + c.tail.String()
	}
	return string(c.head) + c.tail.String()
}
