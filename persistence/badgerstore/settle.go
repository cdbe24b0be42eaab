package badgerstore

// Write returns once its transaction has committed and leaves the rest of
// its bookkeeping, the update of the write-ahead-log index and the move of
// the read version to the new commit, pending: its callers need only the
// commit. Everything that reads the index or the data settles first, so
// that a call started after a Write returned sees that write.

// Settle applies the index update the last Write left pending, if any.
// The journal calls it (see persistence.Journal) after it has answered the
// batch's writers; any later call that needs the update applies it
// itself, so calling Settle is never required. It does nothing once the
// store is closed.
func (s *Store) Settle() {
	if !s.life.Enter() {
		return
	}
	defer s.life.Exit()
	s.walMu.Lock()
	s.settleLocked()
	s.walMu.Unlock()
}

// settleLocked applies the pending update, under walMu held exclusively:
// the index takes the transaction's events and reads begun from now on
// run at its version.
func (s *Store) settleLocked() {
	if s.pending == nil {
		return
	}
	s.wal.apply(s.pending)
	s.committed(s.pendingTs)
	// Emptied now, not at the next Write: until then it would keep the
	// writes' account names, and what they belong to, from the collector.
	s.pending.reset(s.pending.next)
	s.pending = nil
}

// rlockIndex takes walMu shared, once every Write that returned before the
// call is settled. The caller releases walMu with RUnlock.
func (s *Store) rlockIndex() {
	s.walMu.RLock()
	if s.pending == nil {
		return
	}
	s.walMu.RUnlock()
	s.walMu.Lock()
	s.settleLocked()
	s.walMu.Unlock()
	// A Write that commits meanwhile may leave an update pending again;
	// it returns after this call began, so the state before it is as
	// good an answer.
	s.walMu.RLock()
}
