package etcdlinks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

// t0 is the start of every test's clock.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

var (
	testKey  = bytes.Repeat([]byte{0x5a}, 32)
	otherKey = bytes.Repeat([]byte{0x5b}, 32)
)

// noFsync spares the test cluster's disk: durability across a power
// loss is not what these tests check.
func noFsync(c *embed.Config) { c.UnsafeNoFsync = true }

// startCluster starts an etcd cluster of n members for the test.
func startCluster(t *testing.T, n int) *etcdtest.Cluster {
	t.Helper()
	return etcdtest.Start(t, n, noFsync)
}

// prefixes numbers the key prefixes of the stores of one cluster, so
// that subtests sharing it never see each other's keys.
var prefixes atomic.Int64

// freshKeys returns keys under a prefix no other store of the test
// binary uses.
func freshKeys() partition.Keys {
	return partition.NewKeys(fmt.Sprintf("/test-%d/", prefixes.Add(1)))
}

// openStore opens a store over cli under keys with opts (testKey unless
// set) and closes it when the test ends.
func openStore(t *testing.T, cli *clientv3.Client, keys partition.Keys, opts Options) *Store {
	t.Helper()
	if opts.EncryptionKey == nil {
		opts.EncryptionKey = testKey
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cli, keys, opts, zerolog.Nop())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { closeStore(t, s) })
	return s
}

// closeStore closes s, accepting a store the test closed already.
func closeStore(t *testing.T, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil && !errors.Is(err, links.ErrClosed) {
		t.Errorf("Close: %v", err)
	}
}

// rawGet returns the value and lease of an etcd key, relative to the
// store's prefix; found is false when absent.
func rawGet(t *testing.T, s *Store, rel string) (value []byte, lease clientv3.LeaseID, found bool) {
	t.Helper()
	resp, err := s.cli.Get(context.Background(), s.key(rel))
	if err != nil {
		t.Fatalf("Get %s: %v", rel, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, false
	}
	return resp.Kvs[0].Value, clientv3.LeaseID(resp.Kvs[0].Lease), true
}
