package badgerutil

import "sync"

// Lifecycle lets a store's methods run concurrently with each other and
// makes Close wait for those in progress. Methods call Enter before using
// the underlying store and Exit after. Unlike a sync.RWMutex held for
// reading, a method may call another (a scan's callback may load) while
// Close is waiting: the inner call is refused instead of blocking. The
// zero value is an open lifecycle. A Lifecycle must not be copied after
// first use.
type Lifecycle struct {
	mu     sync.Mutex
	idle   sync.Cond // signalled when active drops to zero
	active int
	closed bool
}

// Enter registers a call in progress; it returns false, registering
// nothing, once Close has begun.
func (l *Lifecycle) Enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.active++
	return true
}

// Exit ends a call registered by Enter.
func (l *Lifecycle) Exit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active--
	if l.active == 0 {
		l.idle.Broadcast()
	}
}

// Close marks the store closed and waits until no call is in progress. It
// returns false if the store was already closed.
func (l *Lifecycle) Close() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.closed = true
	l.idle.L = &l.mu
	for l.active > 0 {
		l.idle.Wait()
	}
	return true
}
