package persistence

import (
	"testing"

	"github.com/rs/zerolog"
)

// TestStaleDropsExpiredEvents: events whose expiry has passed are hidden
// by Load and Journaled, so no engine can load and cover them; Stale must
// not name their account (each checkpoint would spawn, load and passivate
// it again), and the record they kept alive is deleted.
func TestStaleDropsExpiredEvents(t *testing.T) {
	s, err := OpenBadger("", BadgerOptions{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// ExpiresAt in the past (an account whose window ended long ago and
	// whose passivation snapshot failed).
	if err := s.Write(&Batch{Accounts: []AccountWrite{{Account: "gone",
		Events: []Event{{Seq: 1, Kind: EventCommit, ID: 1, At: 1000}}, ExpiresAt: 2000}}}); err != nil {
		t.Fatal(err)
	}
	l, err := s.Load("gone")
	if err != nil || len(l.Events) != 0 {
		t.Fatalf("Load = %+v, %v; want nothing (expired)", l, err)
	}
	var journaled, stale []string
	_ = s.Journaled(func(a string) error { journaled = append(journaled, a); return nil })
	_ = s.Stale(0, func(a string) error { stale = append(stale, a); return nil })
	if len(stale) != 0 || s.Records() != 0 {
		t.Errorf("Journaled %v, but Stale(0) = %v and %d WAL record(s) stay live for events nobody can load or cover",
			journaled, stale, s.Records())
	}
}
