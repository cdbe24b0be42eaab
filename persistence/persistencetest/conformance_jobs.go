package persistencetest

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence"
)

// jobTests are TestStore's subtests of the job queue.
var jobTests = []struct {
	name string
	run  func(t *testing.T, open storeFactory)
}{
	{"JobsRoundTrip", testJobsRoundTrip},
	{"JobsWithEventsAtomic", testJobsWithEventsAtomic},
	{"JobsExpiry", testJobsExpiry},
	{"JobAccounts", testJobAccounts},
	{"JobZeroIDRejected", testJobZeroIDRejected},
}

// MustJobs returns account's jobs in s, failing the test on an error.
func MustJobs(t *testing.T, s persistence.Store, account string) []persistence.Job {
	t.Helper()
	jobs, err := s.Jobs(t.Context(), account)
	if err != nil {
		t.Fatalf("Jobs(%q): %v", account, err)
	}
	return jobs
}

func checkJobs(t *testing.T, s persistence.Store, account string, want []persistence.Job) {
	t.Helper()
	got := MustJobs(t, s, account)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Jobs(%q) =\n  %+v\nwant\n  %+v", account, got, want)
	}
}

func testJobsRoundTrip(t *testing.T, open storeFactory) {
	s := open(t)
	j1 := persistence.Job{ID: 1, State: persistence.JobWaiting, Enqueued: T0, Payload: []byte("one")}
	j2 := persistence.Job{ID: 2, State: persistence.JobWaiting, Enqueued: T0, Payload: []byte("two")}
	j300 := persistence.Job{ID: 300, State: persistence.JobWaiting, Enqueued: T1, Payload: []byte("three hundred")}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Jobs: []persistence.Job{j300, j1, j2}},
		{Account: "ab", Jobs: []persistence.Job{{ID: 1, State: persistence.JobWaiting, Payload: []byte("other")}}},
	}})
	// Sorted by ID (300 after 2 in byte order too), and no account sees
	// another's jobs although "a" is a prefix of "ab".
	checkJobs(t, s, "a", []persistence.Job{j1, j2, j300})
	checkJobs(t, s, "ab", []persistence.Job{{ID: 1, State: persistence.JobWaiting, Payload: []byte("other")}})
	checkJobs(t, s, "b", nil)

	// A job written again replaces the stored one; dropped ones go.
	run := j1
	run.State, run.Slot, run.Deadline = persistence.JobRunning, 9, T2
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Jobs: []persistence.Job{run}, DropJobs: []uint64{2, 77}},
	}})
	checkJobs(t, s, "a", []persistence.Job{run, j300})
	// A job dropped and written in one write is stored.
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "a", Jobs: []persistence.Job{j2}, DropJobs: []uint64{2, 1, 300}},
	}})
	checkJobs(t, s, "a", []persistence.Job{j2})
	// Jobs are not account state: an account with jobs only has none.
	CheckLoaded(t, s, "a", persistence.Loaded{})
}

// testJobsWithEventsAtomic: jobs land with the events of the same write,
// and a snapshot leaves them alone.
func testJobsWithEventsAtomic(t *testing.T, open storeFactory) {
	s := open(t)
	run := persistence.Job{ID: 5, State: persistence.JobRunning, Enqueued: T0, Slot: 1, Deadline: T0 + 30_000, Payload: []byte("p")}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "acct", Events: []persistence.Event{Reserve(1, 1, T0)}, Jobs: []persistence.Job{run}},
	}})
	CheckLoaded(t, s, "acct", persistence.Loaded{Events: []persistence.Event{Reserve(1, 1, T0)}})
	checkJobs(t, s, "acct", []persistence.Job{run})
	snap := &persistence.Snapshot{Seq: 1, NextID: 2, Pending: []persistence.Pending{{ID: 1, ReservedAt: T0, Deadline: T0 + 30_000}}}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "acct", Snapshot: snap}}})
	checkJobs(t, s, "acct", []persistence.Job{run})
}

// testJobsExpiry: a job with ExpiresAt in the past (wall clock) is gone;
// one without expiry stays whatever the account's state expiry is.
func testJobsExpiry(t *testing.T, open storeFactory) {
	s := open(t)
	now := time.Now().UnixMilli()
	old := persistence.Job{ID: 1, State: persistence.JobDone, Finished: T0, ExpiresAt: now - time.Hour.Milliseconds()}
	recent := persistence.Job{ID: 2, State: persistence.JobDone, Finished: T0, ExpiresAt: now + time.Hour.Milliseconds()}
	waiting := persistence.Job{ID: 3, State: persistence.JobWaiting, Enqueued: T0, Payload: []byte("w")}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "x", Events: []persistence.Event{Reserve(1, 1, T0)}, ExpiresAt: now - time.Hour.Milliseconds(),
			Jobs: []persistence.Job{old, recent, waiting}},
		{Account: "y", Jobs: []persistence.Job{old}},
	}})
	checkJobs(t, s, "x", []persistence.Job{recent, waiting})
	checkJobs(t, s, "y", nil)
	if got := JobAccounts(t, s); !slices.Equal(got, []string{"x"}) {
		t.Errorf("JobAccounts = %q, want [x]", got)
	}
}

// JobAccounts lists the accounts with jobs in s, in key order.
func JobAccounts(t *testing.T, s persistence.Store) []string {
	t.Helper()
	var got []string
	if err := s.JobAccounts(t.Context(), func(a string) error {
		got = append(got, a)
		return nil
	}); err != nil {
		t.Fatalf("JobAccounts: %v", err)
	}
	return got
}

func testJobAccounts(t *testing.T, open storeFactory) {
	s := open(t)
	var b persistence.Batch
	for _, a := range []string{"b", "a", "ab", "c"} {
		aw := persistence.AccountWrite{Account: a}
		for id := uint64(1); id <= 3; id++ {
			aw.Jobs = append(aw.Jobs, persistence.Job{ID: id, State: persistence.JobWaiting})
		}
		b.Accounts = append(b.Accounts, aw)
	}
	b.Accounts = append(b.Accounts, persistence.AccountWrite{Account: "state-only", Events: []persistence.Event{Reserve(1, 1, T0)}})
	MustWrite(t, s, &b)
	if got, want := JobAccounts(t, s), []string{"a", "ab", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("JobAccounts = %q, want %q", got, want)
	}
	MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "ab", DropJobs: []uint64{1, 2, 3}}}})
	if got, want := JobAccounts(t, s), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("JobAccounts after dropping ab's = %q, want %q", got, want)
	}
	stop := errors.New("stop")
	n := 0
	if err := s.JobAccounts(t.Context(), func(string) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("JobAccounts stopped: err %v after %d calls, want stop after 1", err, n)
	}
}

func testJobZeroIDRejected(t *testing.T, open storeFactory) {
	s := open(t)
	err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "z", Events: []persistence.Event{Reserve(1, 1, T0)}, Jobs: []persistence.Job{{State: persistence.JobWaiting}}},
	}})
	if err == nil {
		t.Fatal("Write of a job with ID 0 succeeded")
	}
	CheckLoaded(t, s, "z", persistence.Loaded{})
	checkJobs(t, s, "z", nil)
}
