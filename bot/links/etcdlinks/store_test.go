package etcdlinks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/linkstest"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

// TestEtcd runs, over one etcd cluster, the suite of every links.Store
// and this package's own tests, each store under its own prefix.
func TestEtcd(t *testing.T) { testEtcd(t, startCluster(t, 1)) }

// testEtcd runs TestEtcd's tests over c.
func testEtcd(t *testing.T, c *etcdtest.Cluster) {
	cli := c.Client()
	t.Run("Conformance", func(t *testing.T) {
		linkstest.TestStore(t, func(t *testing.T) links.Store {
			return openStore(t, cli, freshKeys(), Options{})
		})
	})
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *etcdtestClients)
	}{
		{"OpenOptions", testOpenOptions},
		{"WrongKeyRefused", testWrongKeyRefused},
		{"ValuesSealed", testValuesSealed},
		{"TwoStoresConsumeOnce", testTwoStoresConsumeOnce},
		{"TwoStoresLinkNoLostUpdate", testTwoStoresLinkNoLostUpdate},
		{"ScanOneSnapshot", testScanOneSnapshot},
		{"StateLeaseRoundsUp", testStateLeaseRoundsUp},
		{"LeasesSharedPerBucket", testLeasesSharedPerBucket},
		{"LostLeaseGrantedAgain", testLostLeaseGrantedAgain},
		{"CloseWaitsForCalls", testCloseWaitsForCalls},
		{"ImportGuilds", testImportGuilds},
		{"ImportAutopinRules", testImportAutopinRules},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, &etcdtestClients{a: cli, b: c.Client()}) })
	}
}

// etcdtestClients are two clients of one cluster: a store on each is
// what two members of a pinbot cluster have.
type etcdtestClients struct{ a, b *clientv3.Client }

func testOpenOptions(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	tests := []struct {
		name string
		cli  *clientv3.Client
		keys partition.Keys
		opts Options
		err  error
		msg  string
	}{
		{"no key", c.a, freshKeys(), Options{}, links.ErrEncryptionKey, "EncryptionKey is empty"},
		{"short key", c.a, freshKeys(), Options{EncryptionKey: make([]byte, 15)}, links.ErrEncryptionKey, "15 bytes"},
		{"long key", c.a, freshKeys(), Options{EncryptionKey: make([]byte, 33)}, links.ErrEncryptionKey, "33 bytes"},
		{"negative TTL", c.a, freshKeys(), Options{EncryptionKey: testKey, StateTTL: -1}, links.ErrInvalid, "StateTTL"},
		{"negative timeout", c.a, freshKeys(), Options{EncryptionKey: testKey, RequestTimeout: -1}, links.ErrInvalid, "RequestTimeout"},
		{"no client", nil, freshKeys(), Options{EncryptionKey: testKey}, links.ErrInvalid, "etcd client"},
		{"no prefix", c.a, partition.Keys{}, Options{EncryptionKey: testKey}, links.ErrInvalid, "prefix"},
		{"AES-128", c.a, freshKeys(), Options{EncryptionKey: make([]byte, 16)}, nil, ""},
		{"AES-192", c.a, freshKeys(), Options{EncryptionKey: make([]byte, 24)}, nil, ""},
		{"AES-256", c.a, freshKeys(), Options{EncryptionKey: make([]byte, 32)}, nil, ""},
	}
	for _, tt := range tests {
		s, err := Open(ctx, tt.cli, tt.keys, tt.opts, zerolog.Nop())
		if tt.err == nil {
			if err != nil {
				t.Errorf("%s: Open: %v", tt.name, err)
				continue
			}
			if err := s.Ping(ctx); err != nil {
				t.Errorf("%s: Ping: %v", tt.name, err)
			}
			closeStore(t, s)
			continue
		}
		if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: Open = %v, want %v mentioning %q", tt.name, err, tt.err, tt.msg)
		}
	}
}

// testWrongKeyRefused: a member opening the store with another key than
// the first is refused, naming the key as the reason; the right key, or
// another key under another prefix, opens.
func testWrongKeyRefused(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	keys := freshKeys()
	s := openStore(t, c.a, keys, Options{})
	linkstest.Link(t, s, "u1", "a1")

	_, err := Open(ctx, c.b, keys, Options{EncryptionKey: otherKey}, zerolog.Nop())
	if !errors.Is(err, links.ErrEncryptionKey) || !strings.Contains(err.Error(), "another encryption key") ||
		!strings.Contains(err.Error(), keys.Links()) {
		t.Fatalf("Open with another key = %v, want ErrEncryptionKey naming the key and %q", err, keys.Links())
	}
	// The same key of another length is another key too.
	if _, err := Open(ctx, c.b, keys, Options{EncryptionKey: testKey[:16]}, zerolog.Nop()); !errors.Is(err, links.ErrEncryptionKey) {
		t.Fatalf("Open with a shorter key = %v, want ErrEncryptionKey", err)
	}
	s2 := openStore(t, c.b, keys, Options{EncryptionKey: testKey})
	if tok, err := s2.Token(ctx, "a1"); err != nil || !linkstest.SameToken(tok, linkstest.TokenFor("a1", 0)) {
		t.Fatalf("Token through a second member = %+v, %v", tok, err)
	}
	openStore(t, c.b, freshKeys(), Options{EncryptionKey: otherKey})
}
