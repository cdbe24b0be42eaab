package actors

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// TestConfigValidate: the defaults pass, the limits of each range pass,
// and each setting out of range is refused with an error naming it.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	edges := DefaultConfig()
	edges.Limit, edges.Window, edges.Lease, edges.IdleTimeout = 1<<16, MaxWindow, time.Millisecond, time.Millisecond
	edges.SnapshotEvery, edges.TTLMargin, edges.CheckpointEvery, edges.CheckpointKeep, edges.MaxJournalBatch = 1, 0, 0, 0, 0
	edges.JournalPipeline = 0
	if err := edges.Validate(); err != nil {
		t.Fatalf("settings at the edges of their ranges: %v", err)
	}
	for _, tt := range []struct {
		want string
		set  func(*Config)
	}{
		{"Config.Limit", func(c *Config) { c.Limit = 0 }},
		{"Config.Limit", func(c *Config) { c.Limit = 1<<16 + 1 }},
		{"Config.Window", func(c *Config) { c.Window = time.Millisecond - 1 }},
		{"Config.Window", func(c *Config) { c.Window = MaxWindow + time.Millisecond }},
		{"Config.Lease", func(c *Config) { c.Lease = 0 }},
		{"Config.IdleTimeout", func(c *Config) { c.IdleTimeout = 0 }},
		{"Config.SnapshotEvery", func(c *Config) { c.SnapshotEvery = 0 }},
		{"Config.TTLMargin", func(c *Config) { c.TTLMargin = -time.Second }},
		{"Config.CheckpointEvery", func(c *Config) { c.CheckpointEvery = -time.Second }},
		{"Config.CheckpointKeep", func(c *Config) { c.CheckpointKeep = -1 }},
		{"Config.MaxJournalBatch", func(c *Config) { c.MaxJournalBatch = -1 }},
		{"Config.JournalPipeline", func(c *Config) { c.JournalPipeline = -1 }},
	} {
		c := DefaultConfig()
		tt.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s out of range: Validate = %v, want an error naming it", tt.want, err)
		}
		if _, err := New(c, nil, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s out of range: New = %v, want an error naming it", tt.want, err)
		}
	}
}

// TestConfigJournalPipeline: with JournalPipeline 2, the grants of two
// accounts are written by two Store.Writes at once; the store holds the
// first until the second has started.
func TestConfigJournalPipeline(t *testing.T) {
	clock := NewManualClock(monday)
	st := &pairStore{Store: persistencetest.NewMemStore(clock.Now), entered: make(chan struct{}, 2), release: make(chan struct{})}
	cfg := testConfig(clock)
	cfg.JournalPipeline = 2
	eng, err := New(cfg, st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	var once sync.Once
	release := func() { once.Do(func() { close(st.release) }) }
	defer release() // before Close, when the test fails
	errs := make(chan error, 2)
	for _, account := range []string{"a", "b"} {
		go func() {
			_, err := eng.Reserve(context.Background(), account, 1)
			errs <- err
		}()
		select {
		case <-st.entered: // this grant's Write runs, held
		case <-time.After(10 * time.Second):
			t.Fatalf("the grant of %s was not written beside the one held", account)
		}
	}
	release()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("Reserve: %v", err)
		}
	}
}

// pairStore holds every Write of account writes until release is closed,
// sending on entered as each starts.
type pairStore struct {
	persistence.Store
	entered chan struct{}
	release chan struct{}
}

func (s *pairStore) Write(ctx context.Context, b *persistence.Batch) error {
	if len(b.Accounts) > 0 {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.Store.Write(ctx, b)
}
