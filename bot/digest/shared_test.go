package digest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// sharedOutbox is a SharedOutbox in memory for the member self, over
// the lines and owners of a cluster whose live members are live.
type sharedOutbox struct {
	*memOutbox
	self   string
	owners map[Key]string
	live   map[string]bool
	claims int
}

var _ SharedOutbox = (*sharedOutbox)(nil)

func (o *sharedOutbox) Put(ctx context.Context, l Line) (Line, error) {
	o.mu.Lock()
	owner, found := o.owners[l.Key]
	if !found || !o.live[owner] {
		o.owners[l.Key] = o.self
		owner = o.self
	}
	o.mu.Unlock()
	stored, err := o.memOutbox.Put(ctx, l)
	if err == nil && owner != o.self {
		err = fmt.Errorf("line %v: %w", l.Key, ErrElsewhere)
	}
	return stored, err
}

func (o *sharedOutbox) Claim(ctx context.Context, own bool, fn func(Line) error) error {
	o.mu.Lock()
	o.claims++
	var taken []Line
	for k, l := range o.lines {
		owner := o.owners[k]
		if (owner == o.self && own) || (owner != o.self && !o.live[owner]) {
			o.owners[k] = o.self
			taken = append(taken, l)
		}
	}
	o.mu.Unlock()
	for _, l := range taken {
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

// useShared replaces the harness's Sender by one over a sharedOutbox of
// member "m2", with "m1" live, holding the lines of jobs kept by m1 and
// m2, and returns it.
func (h *harness) useShared(m1, m2 []Line) *sharedOutbox {
	h.t.Helper()
	o := &sharedOutbox{memOutbox: h.outbox, self: "m2", owners: make(map[Key]string),
		live: map[string]bool{"m1": true, "m2": true}}
	for _, l := range m1 {
		o.lines[l.Key], o.owners[l.Key] = l, "m1"
	}
	for _, l := range m2 {
		o.lines[l.Key], o.owners[l.Key] = l, "m2"
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.s.Close(ctx)
	s, err := New(h.api, h.clock, h.log, h.cfg, WithOutbox(o), WithAccess(h))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = s.Close(ctx) })
	h.s = s
	return o
}

// TestSharedResumeAndAdopt: over a SharedOutbox, Resume takes this
// member's lines only; a live member's lines stay until it is gone, and
// then the next adoption, Config.Adopt later, sends them, once.
func TestSharedResumeAndAdopt(t *testing.T) {
	h := newHarness(t, Config{Adopt: 10 * time.Second})
	alice := h.member("alice")
	line := func(job uint64, text string) Line {
		return Line{Key: Key{Account: "acct", Job: job}, User: alice, Text: text}
	}
	o := h.useShared([]Line{line(1, "✅ m1's")}, []Line{line(2, "✅ mine")})
	if n, err := h.s.Resume(context.Background()); err != nil || n != 1 {
		t.Fatalf("Resume = %d, %v; want m2's line only", n, err)
	}
	h.runUntil(h.idle)
	if dms := contents(h.srv.DMs(alice)); !slices.Equal(dms, []string{"Queued pins that ran:\n✅ mine"}) {
		t.Fatalf("DMs after Resume %q", dms)
	}
	// Adoptions while m1 lives take nothing.
	start := h.clock.Now()
	h.runUntil(func() bool { return h.clock.Now().Sub(start) >= 30*time.Second })
	if got := h.outbox.stored(); !slices.Equal(got, []string{"✅ m1's"}) {
		t.Fatalf("outbox holds %q, want m1's line", got)
	}
	o.mu.Lock()
	claims := o.claims
	delete(o.live, "m1")
	o.mu.Unlock()
	if claims < 3 {
		t.Fatalf("%d claims in 30 s, want one per 10 s", claims)
	}
	h.runUntil(func() bool { return len(h.outbox.stored()) == 0 })
	h.runUntil(h.idle)
	if dms := contents(h.srv.DMs(alice)); !slices.Equal(dms, []string{"Queued pins that ran:\n✅ mine", "Queued pins that ran:\n✅ m1's"}) {
		t.Fatalf("DMs after m1 left %q", dms)
	}
	if st := h.s.Stats(); st.Resumed != 1 || st.Adopted != 1 {
		t.Errorf("stats %+v, want 1 resumed, 1 adopted", st)
	}
	if err := h.s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestSharedKeepElsewhere: a line Keep finds kept by another live member
// is not added, while the one it takes over from a gone member is.
func TestSharedKeepElsewhere(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	theirs := Line{Key: Key{Account: "acct", Job: 1}, User: alice, Text: "✅ m1's"}
	gone := Line{Key: Key{Account: "acct", Job: 2}, User: alice, Text: "✅ m3's"}
	o := h.useShared([]Line{theirs}, nil)
	o.mu.Lock()
	o.lines[gone.Key], o.owners[gone.Key] = gone, "m3"
	o.mu.Unlock()
	again := theirs
	again.Text = "❔ reported again"
	kept, err := h.s.Keep(context.Background(), again)
	if err != nil || kept != theirs {
		t.Fatalf("Keep = %+v, %v; want m1's line", kept, err)
	}
	if h.s.Add(kept) {
		t.Error("Add took a line another live member sends")
	}
	kept, err = h.s.Keep(context.Background(), gone)
	if err != nil || kept != gone || !h.s.Add(kept) {
		t.Fatalf("Keep of a gone member's line = %+v, %v, or Add refused it", kept, err)
	}
	h.runUntil(h.idle)
	if dms := contents(h.srv.DMs(alice)); !slices.Equal(dms, []string{"Queued pins that ran:\n✅ m3's"}) {
		t.Errorf("DMs %q", dms)
	}
}
