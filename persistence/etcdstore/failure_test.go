package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// TestUnreachable: with etcd down, every call returns an error by its
// context's deadline or the request timeout, and the store works again
// once etcd is back.
func TestUnreachable(t *testing.T) { testUnreachable(t, etcdtest.Start) }

func testUnreachable(t *testing.T, startEtcd etcdtest.Starter) {
	c := startEtcd(t, 1)
	cli := c.Client()
	const timeout = 500 * time.Millisecond
	s, err := Open(t.Context(), cli, newKeys(), Options{Partitions: 4, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	persistencetest.MustWrite(t, s, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: events(1, 1)}}})
	c.Stop(0)

	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Write", func(ctx context.Context) error {
			return s.Write(ctx, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: events(2, 2), ExpiresAt: time.Now().UnixMilli() + 3_600_000}}, HighWater: 1})
		}},
		{"Write high-water mark", func(ctx context.Context) error { return s.Write(ctx, &persistence.Batch{HighWater: 1}) }},
		{"Load", func(ctx context.Context) error { _, err := s.Load(ctx, "a"); return err }},
		{"Jobs", func(ctx context.Context) error { _, err := s.Jobs(ctx, "a"); return err }},
		{"Accounts", func(ctx context.Context) error { return s.Accounts(ctx, func(string) error { return nil }) }},
		{"PartitionAccounts", func(ctx context.Context) error { return s.PartitionAccounts(ctx, 0, func(string) error { return nil }) }},
		{"HighWater", func(ctx context.Context) error { _, err := s.HighWater(ctx); return err }},
		{"Rules", func(ctx context.Context) error { _, err := s.Rules(ctx); return err }},
		{"SetAnchor", func(ctx context.Context) error { return s.SetAnchor(ctx, persistence.ClockAnchor{Engine: 1}) }},
	}
	for _, cl := range calls {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		start := time.Now()
		err := cl.call(ctx)
		took := time.Since(start)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with etcd down = %v, want the deadline's error", cl.name, err)
		}
		if took > timeout+time.Second {
			t.Errorf("%s with etcd down took %v, past its %v deadline", cl.name, took, timeout)
		}
	}
	// Without a deadline, the request timeout bounds the call.
	start := time.Now()
	if _, err := s.Load(t.Context(), "a"); err == nil {
		t.Error("Load with etcd down and no deadline succeeded")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Load with no deadline took %v, past the 2s request timeout", took)
	}

	// The client reconnects in its own time: each attempt waits for it
	// up to the request timeout.
	c.Restart(0)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		err := s.Write(ctx, &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: "a", Events: events(2, 2)}}})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("Write after etcd came back: %v", err)
		}
	}
	persistencetest.CheckLoaded(t, s, "a", persistence.Loaded{Events: events(1, 2)})
}

// TestQuotaFull: once etcd's space quota is reached, writes fail with an
// error that says so, and reads go on.
func TestQuotaFull(t *testing.T) { testQuotaFull(t, etcdtest.Start, true) }

// testQuotaFull runs TestQuotaFull over startEtcd's server. nestedCounted
// tells whether that server counts the puts of a transaction's nested
// transactions against its quota: etcd 3.4 counts none, so that it still
// takes a high-water mark written alone, whose puts are all nested.
func testQuotaFull(t *testing.T, startEtcd etcdtest.Starter, nestedCounted bool) {
	c := startEtcd(t, 1, etcdtest.QuotaBytes(2<<20))
	s, err := Open(t.Context(), c.Client(), newKeys(), Options{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var werr error
	for i := range 200 {
		a := fmt.Sprintf("acct%03d", i)
		werr = s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{{Account: a, Snapshot: bigSnapshot(1, 64<<10)}}})
		if werr != nil {
			break
		}
	}
	if !errors.Is(werr, ErrQuotaFull) || !strings.Contains(werr.Error(), "etcd quota is full") {
		t.Fatalf("Write past the quota = %v, want ErrQuotaFull", werr)
	}
	err = s.Write(t.Context(), &persistence.Batch{HighWater: persistencetest.T3})
	switch {
	case nestedCounted && !errors.Is(err, ErrQuotaFull):
		t.Errorf("Write of the high-water mark past the quota = %v, want ErrQuotaFull", err)
	case !nestedCounted && err != nil:
		t.Errorf("Write of the high-water mark past the quota = %v, want it taken: this server counts no nested put against the quota", err)
	case !nestedCounted:
		if hw, err := s.HighWater(t.Context()); err != nil || hw != persistencetest.T3 {
			t.Errorf("HighWater after its write past the quota = %d, %v; want %d", hw, err, persistencetest.T3)
		}
	}
	if err := s.SetRules(t.Context(), persistence.Rules{Lease: 1}); !errors.Is(err, ErrQuotaFull) {
		t.Errorf("SetRules past the quota = %v, want ErrQuotaFull", err)
	}
	if l, err := s.Load(t.Context(), "acct000"); err != nil || l.Snapshot.Seq != 1 {
		t.Errorf("Load past the quota = %v, %v; want the snapshot", l.Snapshot.Seq, err)
	}
}
