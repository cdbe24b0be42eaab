package badgerstore

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
)

// TestStaleDeletesExpiredRecordOnDisk: events whose expiry has passed are
// hidden by Load and Journaled, so no engine can load and cover them.
// Stale must not name their account (each checkpoint would spawn, load and
// passivate it again), and the record they kept alive is deleted from the
// database, not only from the in-memory index that Records() reads.
func TestStaleDeletesExpiredRecordOnDisk(t *testing.T) {
	s, err := Open("", Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(&persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "gone",
		Events: []persistence.Event{{Seq: 1, Kind: persistence.EventCommit, ID: 1, At: 1000}}, ExpiresAt: 2000}}}); err != nil {
		t.Fatal(err)
	}
	if got := walSeqs(t, s); len(got) != 1 {
		t.Fatalf("WAL records before Stale = %v, want one", got)
	}
	if got := journaled(t, s); len(got) != 0 {
		t.Errorf("Journaled = %q, want none: the account's only events expired", got)
	}
	var stale []string
	if err := s.Stale(0, func(a string) error { stale = append(stale, a); return nil }); err != nil {
		t.Fatalf("Stale: %v", err)
	}
	if len(stale) != 0 || s.Records() != 0 {
		t.Errorf("Stale(0) = %v, Records() = %d; want none and 0", stale, s.Records())
	}
	if got := walSeqs(t, s); len(got) != 0 {
		t.Errorf("WAL records in the database after Stale = %v, want none (deleted as spent)", got)
	}
}
