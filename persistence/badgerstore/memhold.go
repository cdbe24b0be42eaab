package badgerstore

import (
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
)

// memtableHold keeps a reference on Badger's memtables, so that the file of
// a memtable Badger has flushed is deleted by the hold's own goroutine
// instead of by Badger's flusher.
//
// Badger drops its last reference on a flushed memtable while holding the
// database lock, and the last reference deletes the memtable's log file:
// unmapping, truncating and removing twice MemTableSize bytes, which takes
// milliseconds (measured: the history of docs/benchmarks.md). Every
// write waits for that lock before it can commit, so each flush stalled
// every grant that long. A
// Badger iterator references every memtable that exists when it is made
// (and nothing else Badger waits on: its prefix matches no table). The hold
// swaps such an iterator for a fresh one every holdEvery bytes written,
// from a goroutine of its own: the swap releases the memtables flushed
// since the previous one, and so deletes their files, without Badger's
// lock. A memtable flushed before any swap saw it is deleted by Badger;
// nothing else changes.
type memtableHold struct {
	db *badger.DB

	mu  sync.Mutex // guards txn and it, swapped by refresh and release
	txn *badger.Txn
	it  *badger.Iterator

	refreshes atomic.Int64 // how many refreshes ran, for tests
}

// refresh releases the memtables the hold references and references those
// that exist now. Releasing first means a memtable flushed since the last
// refresh is deleted here even if Badger has not yet forgotten it.
func (h *memtableHold) refresh() {
	h.release()
	txn := h.db.NewTransactionAt(0, false)
	it := txn.NewIterator(badger.IteratorOptions{Prefix: holdPrefix})
	h.mu.Lock()
	h.txn, h.it = txn, it
	h.mu.Unlock()
	h.refreshes.Add(1)
}

// release drops the hold's references, if any.
func (h *memtableHold) release() {
	h.mu.Lock()
	txn, it := h.txn, h.it
	h.txn, h.it = nil, nil
	h.mu.Unlock()
	if it != nil {
		it.Close()
		txn.Discard()
	}
}

// holdsPerMemtable is how often, at least, the memtable hold is refreshed
// while one memtable fills: every MemTableSize/holdsPerMemtable bytes
// written, each entry counted with entryOverhead bytes more than its key
// and value, about what it takes in a memtable.
const (
	holdsPerMemtable = 8
	entryOverhead    = 128
)

// runHold refreshes the memtable hold each time Write asks, until Close,
// which closes holdWake only once no Write can run and waits for runHold
// to return before it closes the database.
func (s *Store) runHold() {
	defer close(s.holdDone)
	for range s.holdWake {
		s.hold.refresh()
	}
}

// wrote counts bytes written to Badger and, every holdEvery bytes, asks
// runHold to refresh the memtable hold. It is called under writeMu.
func (s *Store) wrote(entries, bytes int) {
	if s.hold == nil {
		return
	}
	s.sinceHold += int64(bytes + entries*entryOverhead)
	if s.sinceHold < s.holdEvery {
		return
	}
	s.sinceHold = 0
	select {
	case s.holdWake <- struct{}{}:
	default:
	}
}
