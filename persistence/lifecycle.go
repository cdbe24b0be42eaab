package persistence

import (
	"fmt"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"
)

// Lifecycle lets a store's methods run concurrently with each other and
// makes Close wait for those in progress. Methods call Enter before using
// the underlying store and Exit after. Unlike a sync.RWMutex held for
// reading, a method may call another (Accounts' callback may Load) while
// Close is waiting: the inner call is refused instead of blocking. The zero
// value is an open lifecycle.
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

// enter, exit and close are Enter, Exit and Close with this package's
// ErrClosed.
func (l *Lifecycle) enter() error {
	if !l.Enter() {
		return ErrClosed
	}
	return nil
}

func (l *Lifecycle) exit() { l.Exit() }

func (l *Lifecycle) close() error {
	if !l.Close() {
		return ErrClosed
	}
	return nil
}

// NewBadgerLogger returns a badger.Logger that sends Badger's messages to
// log: errors and warnings as such, its routine progress (Info) at debug
// level and its Debug messages at trace level, formatted only when the
// level is enabled.
func NewBadgerLogger(log zerolog.Logger) badger.Logger { return badgerLogger{log: log} }

type badgerLogger struct{ log zerolog.Logger }

func (l badgerLogger) Errorf(format string, args ...any)   { emit(l.log.Error(), format, args) }
func (l badgerLogger) Warningf(format string, args ...any) { emit(l.log.Warn(), format, args) }
func (l badgerLogger) Infof(format string, args ...any)    { emit(l.log.Debug(), format, args) }
func (l badgerLogger) Debugf(format string, args ...any)   { emit(l.log.Trace(), format, args) }

func emit(e *zerolog.Event, format string, args []any) {
	if !e.Enabled() {
		return
	}
	e.Msg(strings.TrimSpace(fmt.Sprintf(format, args...)))
}
