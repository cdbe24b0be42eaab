package etcdlinks

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
	"github.com/pinbot/pinbot/bot/links/linkstest"
)

// TestBucketEnd: deadlines round up to the end of their bucket; one on a
// boundary is its own end.
func TestBucketEnd(t *testing.T) {
	day := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		deadline time.Time
		width    time.Duration
		want     time.Time
	}{
		{day.Add(3*time.Hour + 4*time.Minute + 5*time.Second), time.Minute, day.Add(3*time.Hour + 5*time.Minute)},
		{day.Add(3 * time.Hour), time.Minute, day.Add(3 * time.Hour)},
		{day.Add(3*time.Hour + time.Nanosecond), time.Hour, day.Add(4 * time.Hour)},
		{day.Add(time.Nanosecond), 24 * time.Hour, day.Add(24 * time.Hour)},
		{day, 24 * time.Hour, day},
	}
	for i, tt := range tests {
		if got := bucketEnd(tt.deadline, tt.width); !got.Equal(tt.want) {
			t.Errorf("step %d: bucketEnd(%v, %v) = %v, want %v", i, tt.deadline, tt.width, got, tt.want)
		}
	}
}

// TestLeaseTTL: the time to live is rounded up to whole seconds, and is
// at least a bucket for an end past or close.
func TestLeaseTTL(t *testing.T) {
	tests := []struct {
		end   time.Duration // after now
		width time.Duration
		want  int64
	}{
		{10 * time.Minute, time.Minute, 600},
		{10*time.Minute + time.Millisecond, time.Minute, 601},
		{10*time.Minute - time.Millisecond, time.Minute, 600},
		{30 * time.Second, time.Minute, 60},
		{-time.Hour, time.Hour, 3600},
	}
	for i, tt := range tests {
		if got := leaseTTL(t0.Add(tt.end), t0, tt.width); got != tt.want {
			t.Errorf("step %d: leaseTTL(now+%v, now, %v) = %d, want %d", i, tt.end, tt.width, got, tt.want)
		}
	}
}

// grantedTTL returns the time to live the lease of the key rel was
// granted, in seconds.
func grantedTTL(t *testing.T, s *Store, rel string) (clientv3.LeaseID, int64) {
	t.Helper()
	_, lease, found := rawGet(t, s, rel)
	if !found || lease == 0 {
		t.Fatalf("%s: found %v, lease %x; want a key under a lease", rel, found, lease)
	}
	resp, err := s.cli.TimeToLive(context.Background(), lease)
	if err != nil {
		t.Fatal(err)
	}
	return lease, resp.GrantedTTL
}

func fixedClock(at time.Time) func() time.Time { return func() time.Time { return at } }

// testStateLeaseRoundsUp: a state and its index entry live under a lease
// that ends at the end of the minute of the state's expiry, by
// Options.Now: never before it.
func testStateLeaseRoundsUp(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	keys := freshKeys()
	minute := t0.Truncate(time.Minute)
	for _, tt := range []struct {
		now  time.Time
		want int64
	}{
		{t0, 655},                      // 03:04:05 + 10m rounds up to 03:15:00
		{minute, 600},                  // 03:04:00 + 10m is a minute's end
		{minute.Add(time.Second), 659}, // to 03:15:00 again
	} {
		s := openStore(t, c.a, keys, Options{Now: fixedClock(tt.now)})
		st, err := s.NewState(ctx, "u1", tt.now)
		if err != nil {
			t.Fatal(err)
		}
		hash := record.StateHash(st)
		lease, ttl := grantedTTL(t, s, record.StateKey(hash))
		if ttl != tt.want {
			t.Errorf("now %v: state lease of %ds, want %d", tt.now.Format(time.TimeOnly), ttl, tt.want)
		}
		if idx, _ := grantedTTL(t, s, stateUserKey("u1", tt.now.Add(links.DefaultStateTTL), hash)); idx != lease {
			t.Errorf("index entry under lease %x, state under %x", idx, lease)
		}
	}
}

// testLeasesSharedPerBucket: records whose deadlines fall in one bucket
// share a lease, ending at the bucket's end; another bucket has another.
func testLeasesSharedPerBucket(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	s := openStore(t, c.a, freshKeys(), Options{Now: fixedClock(t0)})

	// Pictures pinned: days. t0 + 90 days is 2030-04-02 03:04:05.
	until := t0.Add(90 * 24 * time.Hour)
	pins := []links.PinnedPicture{
		{Key: "k1", PinURL: "https://pin/1", Until: until},
		{Key: "k2", PinURL: "https://pin/2", Until: until.Add(20 * time.Hour)},
		{Key: "k3", PinURL: "https://pin/3", Until: until.Add(21 * time.Hour)}, // the next day
	}
	if err := s.RememberPinned(ctx, "a1", "b1", pins); err != nil {
		t.Fatal(err)
	}
	l1, ttl1 := grantedTTL(t, s, record.HistoryKey("a1", "b1", "k1"))
	l2, _ := grantedTTL(t, s, record.HistoryKey("a1", "b1", "k2"))
	l3, ttl3 := grantedTTL(t, s, record.HistoryKey("a1", "b1", "k3"))
	dayEnd := time.Date(2030, 4, 3, 0, 0, 0, 0, time.UTC)
	if l1 != l2 || l1 == l3 {
		t.Errorf("leases %x %x %x: want the first two shared, the third apart", l1, l2, l3)
	}
	if want := int64(dayEnd.Sub(t0) / time.Second); ttl1 != want {
		t.Errorf("history lease of %ds, want %d (to the end of the until's day)", ttl1, want)
	}
	if want := int64(dayEnd.Add(24*time.Hour).Sub(t0) / time.Second); ttl3 != want {
		t.Errorf("next day's lease of %ds, want %d", ttl3, want)
	}

	// Pins made elsewhere: hours, from the caller's now. 12h from
	// 03:04:05 rounds up to 16:00.
	for _, acct := range []string{"a1", "a2"} {
		pin := links.ObservedPin{ID: "p1", CreatedAt: t0, Until: t0.Add(12 * time.Hour)}
		if acct == "a2" {
			pin.Until = pin.Until.Add(50 * time.Minute)
		}
		if err := s.MarkObserved(ctx, acct, []links.ObservedPin{pin}, t0); err != nil {
			t.Fatal(err)
		}
	}
	o1, ttl := grantedTTL(t, s, record.ObservedKey("a1"))
	o2, _ := grantedTTL(t, s, record.ObservedKey("a2"))
	if want := int64(12*3600 + 55*60 + 55); o1 != o2 || ttl != want {
		t.Errorf("observation leases %x, %x of %ds; want one of %ds", o1, o2, ttl, want)
	}

	// OAuth states: minutes.
	a, err := s.NewState(ctx, "u1", t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.NewState(ctx, "u2", t0)
	if err != nil {
		t.Fatal(err)
	}
	la, _ := grantedTTL(t, s, record.StateKey(record.StateHash(a)))
	lb, _ := grantedTTL(t, s, record.StateKey(record.StateHash(b)))
	if la != lb {
		t.Errorf("two states of one minute under leases %x and %x, want one", la, lb)
	}
}

// testLostLeaseGrantedAgain: a lease the store holds that etcd no longer
// has (revoked here; expired early or lost with a restore elsewhere) is
// replaced at the next write, which succeeds.
func testLostLeaseGrantedAgain(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	s := openStore(t, c.a, freshKeys(), Options{Now: fixedClock(t0)})
	revoke := func(rel string) {
		t.Helper()
		_, lease, found := rawGet(t, s, rel)
		if !found {
			t.Fatalf("%s absent", rel)
		}
		if _, err := s.cli.Revoke(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	pin := func(key string) links.PinnedPicture {
		return links.PinnedPicture{Key: key, PinURL: "https://pin/" + key, Until: t0.Add(time.Hour)}
	}

	// An unconditional write: RememberPinned.
	if err := s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{pin("k1")}); err != nil {
		t.Fatal(err)
	}
	revoke(record.HistoryKey("a1", "b1", "k1"))
	if err := s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{pin("k2")}); err != nil {
		t.Fatalf("RememberPinned after its lease was revoked: %v", err)
	}
	got, err := s.PinnedBefore(ctx, "a1", "b1", []string{"k1", "k2"}, t0)
	if err != nil || len(got) != 1 || got["k2"] == "" {
		t.Fatalf("PinnedBefore = %v, %v; want k2 only (k1 went with its lease)", got, err)
	}

	// A compare-and-swap: NewState.
	st, err := s.NewState(ctx, "u1", t0)
	if err != nil {
		t.Fatal(err)
	}
	revoke(record.StateKey(record.StateHash(st)))
	if _, err := s.ConsumeState(ctx, st, t0); !errors.Is(err, links.ErrStateInvalid) {
		t.Fatalf("state whose lease was revoked: %v, want ErrStateInvalid", err)
	}
	st, err = s.NewState(ctx, "u1", t0)
	if err != nil {
		t.Fatalf("NewState after its lease was revoked: %v", err)
	}
	if u, err := s.ConsumeState(ctx, st, t0); err != nil || u != "u1" {
		t.Fatalf("ConsumeState = %q, %v; want u1", u, err)
	}
}

// testCloseWaitsForCalls: Close waits for a call in progress (a scan
// whose callback has not returned) and refuses new ones meanwhile.
func testCloseWaitsForCalls(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	s := openStore(t, c.a, freshKeys(), Options{})
	linkstest.Link(t, s, "u1", "a1")
	inside, release := make(chan struct{}), make(chan struct{})
	scanned := make(chan error, 1)
	go func() {
		scanned <- s.Users(ctx, func(links.User) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Close has begun once a new call is refused.
	for {
		if _, err := s.User(ctx, "u1"); errors.Is(err, links.ErrClosed) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a scan was in progress", err)
	default:
	}
	close(release)
	if err := <-scanned; err != nil {
		t.Errorf("scan in progress at Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}
