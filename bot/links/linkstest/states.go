package linkstest

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/links"
)

// testConsumeState: a state works once, until its expiry; a forged or
// malformed one never.
func testConsumeState(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	ttl := links.DefaultStateTTL
	s := open(t)
	mk := func(user string, at time.Time) string {
		t.Helper()
		st, err := s.NewState(ctx, user, at)
		if err != nil {
			t.Fatalf("NewState: %v", err)
		}
		return st
	}
	fresh := mk("u1", t0)
	edge := mk("u2", t0)
	expired := mk("u3", t0)
	early := mk("u4", t0)
	forged := strings.Repeat("A", links.StateLen) // well formed, never issued

	tests := []struct {
		name  string
		state string
		now   time.Time
		user  string
		err   error
	}{
		{"fresh", fresh, t0.Add(time.Minute), "u1", nil},
		{"replayed", fresh, t0.Add(time.Minute), "", links.ErrStateInvalid},
		{"at exactly the TTL", edge, t0.Add(ttl), "u2", nil},
		{"1ms after the TTL", expired, t0.Add(ttl + time.Millisecond), "", links.ErrStateExpired},
		{"expired, retried", expired, t0.Add(ttl + time.Millisecond), "", links.ErrStateInvalid},
		{"clock earlier than issue", early, t0.Add(-time.Hour), "u4", nil},
		{"forged", forged, t0, "", links.ErrStateInvalid},
		{"empty", "", t0, "", links.ErrStateInvalid},
		{"short", fresh[:20], t0, "", links.ErrStateInvalid},
		{"long", fresh + "A", t0, "", links.ErrStateInvalid},
		{"bad alphabet", strings.Repeat("+", links.StateLen), t0, "", links.ErrStateInvalid},
		{"padding", fresh[:links.StateLen-1] + "=", t0, "", links.ErrStateInvalid},
	}
	for i, tt := range tests {
		user, err := s.ConsumeState(ctx, tt.state, tt.now)
		if user != tt.user || (tt.err == nil && err != nil) || (tt.err != nil && !errors.Is(err, tt.err)) {
			t.Errorf("step %d (%s): ConsumeState = %q, %v; want %q, %v", i, tt.name, user, err, tt.user, tt.err)
		}
	}
}

// testStateFormat: states are StateLen URL-safe characters, never issued
// twice.
func testStateFormat(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	urlSafe := regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	seen := make(map[string]bool)
	for range 200 {
		st, err := s.NewState(ctx, "u1", t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(st) != links.StateLen || len(st)*6 < 128 || !urlSafe.MatchString(st) {
			t.Fatalf("state %q: want %d URL-safe characters (at least 128 bits)", st, links.StateLen)
		}
		if seen[st] {
			t.Fatalf("state %q issued twice", st)
		}
		seen[st] = true
	}
}

// testConcurrentConsume lets several goroutines consume each state at
// once: exactly one of them gets the user.
func testConcurrentConsume(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	const states, racers = 20, 8
	for i := range states {
		st, err := s.NewState(ctx, "u1", t0)
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
			errs []error
		)
		start := make(chan struct{})
		for range racers {
			wg.Go(func() {
				<-start
				user, err := s.ConsumeState(ctx, st, t0.Add(time.Second))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && user == "u1":
					wins++
				case errors.Is(err, links.ErrStateInvalid):
				default:
					errs = append(errs, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins != 1 || len(errs) > 0 {
			t.Fatalf("state %d: %d winners (want 1), unexpected errors %v", i, wins, errs)
		}
	}
}

// testPurgeStates: PurgeStates deletes the expired states and only them.
func testPurgeStates(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t) // TTL 10 minutes
	users := 0
	issue := func(at time.Time) string {
		t.Helper()
		users++ // one state per user: a user keeps only MaxStatesPerUser
		st, err := s.NewState(ctx, "u"+strconv.Itoa(users), at)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// 600 states from t0 (more than one purge transaction), one at
	// t0+5m, one at t0+20m.
	var old []string
	for range 600 {
		old = append(old, issue(t0))
	}
	mid := issue(t0.Add(5 * time.Minute))
	late := issue(t0.Add(20 * time.Minute))

	steps := []struct {
		now  time.Time
		want int
	}{
		{t0.Add(10 * time.Minute), 0},   // t0's states expire after t0+10m
		{t0.Add(16 * time.Minute), 601}, // t0's and mid
		{t0.Add(16 * time.Minute), 0},   // nothing left to purge
	}
	for i, st := range steps {
		n, err := s.PurgeStates(ctx, st.now)
		if err != nil || n != st.want {
			t.Fatalf("step %d: PurgeStates(%v) = %d, %v; want %d", i, st.now.Sub(t0), n, err, st.want)
		}
	}
	// Purged states are invalid, not expired: they are gone.
	for _, st := range []string{old[0], old[599], mid} {
		if _, err := s.ConsumeState(ctx, st, t0); !errors.Is(err, links.ErrStateInvalid) {
			t.Errorf("purged state: %v, want ErrStateInvalid", err)
		}
	}
	if u, err := s.ConsumeState(ctx, late, t0.Add(21*time.Minute)); err != nil || u != "u602" {
		t.Errorf("unexpired state after purge: %q, %v; want u602", u, err)
	}
}

// testNewStateRetiresOldest: a user holds at most MaxStatesPerUser links
// in progress; a newer /link retires the oldest, other users' stay.
func testNewStateRetiresOldest(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	other, err := s.NewState(ctx, "u2", t0)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for i := range links.MaxStatesPerUser + 2 {
		st, err := s.NewState(ctx, "u1", t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, st)
	}
	for i, st := range states {
		_, err := s.ConsumeState(ctx, st, t0.Add(time.Minute))
		if retired := i < 2; retired != errors.Is(err, links.ErrStateInvalid) {
			t.Errorf("state %d of %d: ConsumeState = %v; retired: %v", i+1, len(states), err, retired)
		}
	}
	if u, err := s.ConsumeState(ctx, other, t0.Add(time.Minute)); err != nil || u != "u2" {
		t.Errorf("another user's state: %q, %v", u, err)
	}
}

// testLinkStateKeepsRequest: the state gives back the /link request it
// was made for, interaction token and time included; a bad interaction
// token is refused before anything is stored.
func testLinkStateKeepsRequest(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	s := open(t)
	at := t0.Add(-30 * time.Second)
	want := links.Request{User: "u1", Interaction: "aW50ZXJhY3Rpb246MTIzNDU2Nzg5", At: at}
	state, err := s.NewLinkState(ctx, want, t0)
	if err != nil {
		t.Fatalf("NewLinkState: %v", err)
	}
	plain, err := s.NewState(ctx, "u2", t0)
	if err != nil {
		t.Fatalf("NewState: %v", err)
	}
	for _, bad := range []string{"with space", "tab\there", strings.Repeat("x", links.MaxTokenLen+1), "naïve"} {
		if _, err := s.NewLinkState(ctx, links.Request{User: "u3", Interaction: bad, At: t0}, t0); !errors.Is(err, links.ErrInvalid) {
			t.Errorf("NewLinkState with interaction %.20q: %v, want ErrInvalid", bad, err)
		}
	}

	got, err := s.ConsumeLinkState(ctx, state, t0.Add(time.Minute))
	if err != nil || got.User != want.User || got.Interaction != want.Interaction || !got.At.Equal(at) {
		t.Fatalf("ConsumeLinkState = %+v, %v; want %+v", got, err, want)
	}
	// A state made without an interaction gives its user and time.
	if got, err := s.ConsumeLinkState(ctx, plain, t0.Add(time.Minute)); err != nil || got.User != "u2" || got.Interaction != "" || !got.At.Equal(t0) {
		t.Fatalf("ConsumeLinkState of NewState's state = %+v, %v; want u2 at t0", got, err)
	}
	if _, err := s.ConsumeLinkState(ctx, state, t0.Add(time.Minute)); !errors.Is(err, links.ErrStateInvalid) {
		t.Errorf("replayed: %v, want ErrStateInvalid", err)
	}
}
