package clusterconf

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

func settings() Settings {
	return Settings{
		Partitions:    partition.DefaultCount,
		Limit:         100,
		Window:        12 * time.Hour,
		Lease:         5 * time.Minute,
		Shards:        4,
		EncryptionKey: KeyCheck([]byte("enc"), "encryption"),
		ClusterKey:    KeyCheck([]byte("peers"), "cluster"),
	}
}

func TestAgree(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("first stores, same agrees, zero shards adopts", func(t *testing.T) {
		keys := partition.NewKeys("/a")
		if got, err := Agree(ctx, cli, keys, settings()); err != nil || got != settings() {
			t.Fatalf("first member: %+v, %v", got, err)
		}
		if got, err := Agree(ctx, cli, keys, settings()); err != nil || got != settings() {
			t.Fatalf("same settings: %+v, %v", got, err)
		}
		s := settings()
		s.Shards = 0
		if got, err := Agree(ctx, cli, keys, s); err != nil || got.Shards != 4 {
			t.Fatalf("shards 0: %+v, %v; want the cluster's 4", got, err)
		}
	})

	t.Run("differences named", func(t *testing.T) {
		keys := partition.NewKeys("/b")
		if _, err := Agree(ctx, cli, keys, settings()); err != nil {
			t.Fatal(err)
		}
		s := settings()
		s.Limit, s.Window, s.Shards = 50, time.Hour, 8
		s.EncryptionKey = KeyCheck([]byte("other"), "encryption")
		_, err := Agree(ctx, cli, keys, s)
		if !errors.Is(err, ErrMismatch) {
			t.Fatalf("Agree with other settings: %v, want ErrMismatch", err)
		}
		for _, want := range []string{"pin limit is 100 in the cluster, 50 here", "pin window is 12h0m0s in the cluster, 1h0m0s here", "shard count is 4 in the cluster, 8 here", "encryption key differs"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		for _, check := range []string{settings().EncryptionKey, s.EncryptionKey} {
			if strings.Contains(err.Error(), check) {
				t.Errorf("error %q quotes a key check", err)
			}
		}
	})

	t.Run("concurrent first members: one wins", func(t *testing.T) {
		keys := partition.NewKeys("/c")
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := settings()
				s.Limit = 10 + i
				_, errs[i] = Agree(ctx, cli, keys, s)
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !errors.Is(err, ErrMismatch) {
				t.Fatalf("unexpected error %v", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d of 8 members with different limits started, want 1", ok)
		}
	})

	t.Run("invalid and unreachable", func(t *testing.T) {
		s := settings()
		s.Partitions = 0
		if _, err := Agree(ctx, cli, partition.NewKeys("/d"), s); err == nil {
			t.Fatal("partition count 0 accepted")
		}
		c.Stop(0)
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		if _, err := Agree(short, cli, partition.NewKeys("/d"), settings()); err == nil {
			t.Fatal("Agree with etcd stopped returned no error")
		}
	})
}
