package badgerlinks_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/links/linkstest"
)

// TestConformance runs the suite of every links.Store on an encrypted
// store on disk and on one in memory.
func TestConformance(t *testing.T) {
	t.Run("disk", func(t *testing.T) {
		linkstest.TestStore(t, func(t *testing.T) links.Store {
			s := openDisk(t, t.TempDir(), zerolog.Nop())
			t.Cleanup(func() { closeStore(t, s) })
			return s
		})
	})
	t.Run("memory", func(t *testing.T) {
		linkstest.TestStore(t, func(t *testing.T) links.Store {
			return newStore(t, badgerlinks.Options{})
		})
	})
}

func TestOpenOptions(t *testing.T) {
	tests := []struct {
		name string
		dir  bool // use a temporary directory
		opts badgerlinks.Options
		err  error  // nil wants success
		msg  string // the error must mention it
	}{
		{"no key on disk", true, badgerlinks.Options{}, links.ErrEncryptionKey, "EncryptionKey is empty"},
		{"short key", true, badgerlinks.Options{EncryptionKey: make([]byte, 15)}, links.ErrEncryptionKey, "15 bytes"},
		{"long key", true, badgerlinks.Options{EncryptionKey: make([]byte, 33)}, links.ErrEncryptionKey, "33 bytes"},
		{"AES-128", true, badgerlinks.Options{EncryptionKey: make([]byte, 16)}, nil, ""},
		{"AES-192", true, badgerlinks.Options{EncryptionKey: make([]byte, 24)}, nil, ""},
		{"AES-256", true, badgerlinks.Options{EncryptionKey: make([]byte, 32)}, nil, ""},
		{"no directory", false, badgerlinks.Options{EncryptionKey: make([]byte, 32)}, links.ErrInvalid, "empty data directory"},
		{"negative TTL", true, badgerlinks.Options{EncryptionKey: make([]byte, 32), StateTTL: -1}, links.ErrInvalid, "StateTTL"},
		{"in memory, no key", false, badgerlinks.Options{InMemory: true}, nil, ""},
		{"in memory, key", false, badgerlinks.Options{InMemory: true, EncryptionKey: make([]byte, 16)}, nil, ""},
		{"in memory, bad key", false, badgerlinks.Options{InMemory: true, EncryptionKey: make([]byte, 3)}, links.ErrEncryptionKey, "3 bytes"},
	}
	for _, tt := range tests {
		dir := ""
		if tt.dir {
			dir = t.TempDir()
		}
		s, err := badgerlinks.Open(dir, tt.opts, zerolog.Nop())
		if tt.err == nil {
			if err != nil {
				t.Errorf("%s: Open: %v", tt.name, err)
				continue
			}
			if err := s.Ping(context.Background()); err != nil {
				t.Errorf("%s: Ping: %v", tt.name, err)
			}
			closeStore(t, s)
			continue
		}
		if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: Open = %v, want %v mentioning %q", tt.name, err, tt.err, tt.msg)
		}
		if s != nil {
			closeStore(t, s)
		}
	}
}

func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	s := openDisk(t, dir, zerolog.Nop())
	defer closeStore(t, s)
	s2, err := badgerlinks.Open(dir, badgerlinks.Options{EncryptionKey: testKey}, zerolog.Nop())
	if !errors.Is(err, links.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open = %v, want ErrLocked naming %q", err, dir)
	}
	if s2 != nil {
		closeStore(t, s2)
	}
}

func TestStateTTLOption(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, badgerlinks.Options{StateTTL: time.Minute})
	a, err := s.NewState(ctx, "u1", t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.NewState(ctx, "u1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsumeState(ctx, a, t0.Add(time.Minute+time.Millisecond)); !errors.Is(err, links.ErrStateExpired) {
		t.Errorf("after 1m1ms: %v, want ErrStateExpired", err)
	}
	if u, err := s.ConsumeState(ctx, b, t0.Add(time.Minute)); err != nil || u != "u1" {
		t.Errorf("after 1m: %q, %v; want u1", u, err)
	}
}

// TestOutboxSurvivesReopen: lines put are there after the store is closed
// and opened again, in order of account and job; deleted ones are gone
// for good.
func TestOutboxSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDisk(t, dir, zerolog.Nop())
	want := []digest.Line{linkstest.Line("a1", 9, "one"), linkstest.Line("a1", 10, "two"), linkstest.Line("a2", 3, "three")}
	for _, l := range []digest.Line{want[2], want[1], want[0]} {
		if _, err := s.Outbox().Put(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	closeStore(t, s)

	s = openDisk(t, dir, zerolog.Nop())
	if got := linkstest.OutboxLines(t, s.Outbox()); !slices.Equal(got, want) {
		t.Fatalf("after reopening: %+v, want %+v", got, want)
	}
	if err := s.Outbox().Delete(ctx, []digest.Key{want[0].Key, want[2].Key, {Account: "a9", Job: 1}}); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)

	s = openDisk(t, dir, zerolog.Nop())
	defer closeStore(t, s)
	if got := linkstest.OutboxLines(t, s.Outbox()); !slices.Equal(got, want[1:2]) {
		t.Fatalf("after deleting and reopening: %+v, want %+v", got, want[1:2])
	}
}

// TestOutboxDeleteMany: Delete removes more keys than one transaction
// takes.

// TestLinkStateSurvivesReopen: a state made before the store was closed
// gives back its /link request, interaction token and time included,
// once the store is opened again, and works once.
func TestLinkStateSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openDisk(t, dir, zerolog.Nop())
	at := t0.Add(-30 * time.Second)
	want := links.Request{User: "u1", Interaction: "aW50ZXJhY3Rpb246MTIzNDU2Nzg5", At: at}
	state, err := s.NewLinkState(ctx, want, t0)
	if err != nil {
		t.Fatalf("NewLinkState: %v", err)
	}
	closeStore(t, s)
	s = openDisk(t, dir, zerolog.Nop())
	t.Cleanup(func() { closeStore(t, s) })

	got, err := s.ConsumeLinkState(ctx, state, t0.Add(time.Minute))
	if err != nil || got.User != want.User || got.Interaction != want.Interaction || !got.At.Equal(at) {
		t.Fatalf("ConsumeLinkState = %+v, %v; want %+v", got, err, want)
	}
	if _, err := s.ConsumeLinkState(ctx, state, t0.Add(time.Minute)); !errors.Is(err, links.ErrStateInvalid) {
		t.Errorf("replayed: %v, want ErrStateInvalid", err)
	}
}

// BenchmarkSaveToken measures one durable token write on disk: the cost
// of a refresh-token rotation, dominated by the fsync.
func BenchmarkSaveToken(b *testing.B) {
	ctx := context.Background()
	s, err := badgerlinks.Open(b.TempDir(), badgerlinks.Options{EncryptionKey: testKey}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Link(ctx, "u1", links.Account{ID: "a1"}, linkstest.TokenFor("a1", 0)); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if err := s.SaveToken(ctx, "a1", linkstest.TokenFor("a1", i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUser measures the read /pin does for every command.
func BenchmarkUser(b *testing.B) {
	ctx := context.Background()
	s, err := badgerlinks.Open(b.TempDir(), badgerlinks.Options{EncryptionKey: testKey}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Link(ctx, "u1", links.Account{ID: "a1"}, linkstest.TokenFor("a1", 0)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.User(ctx, "u1"); err != nil {
			b.Fatal(err)
		}
	}
}
