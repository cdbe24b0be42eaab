package etcdlinks

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
	"github.com/pinbot/pinbot/bot/links/linkstest"
)

// testValuesSealed: no value in etcd holds a token, a name, an
// interaction token, a digest's text or a pin's address in the clear,
// and a sealed value moved to another key does not open there.
func testValuesSealed(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	s := openStore(t, c.a, freshKeys(), Options{})
	secrets := []string{"secret-access-XYZ", "secret-refresh-XYZ", "alice-the-user", "interaction-XYZ", "digest text XYZ", "https://pin/XYZ"}
	tok := &oauth2.Token{AccessToken: secrets[0], RefreshToken: secrets[1], TokenType: "bearer", Expiry: t0}
	if err := s.Link(ctx, "u1", links.Account{ID: "a1", Username: secrets[2]}, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewLinkState(ctx, links.Request{User: "u1", Interaction: secrets[3], At: t0}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Outbox().Put(ctx, linkstest.Line("a1", 1, secrets[4])); err != nil {
		t.Fatal(err)
	}
	if err := s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{{Key: "k1", PinURL: secrets[5], Until: t0.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}

	resp, err := s.cli.Get(ctx, s.prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) < 8 {
		t.Fatalf("only %d keys under %s", len(resp.Kvs), s.prefix)
	}
	for _, kv := range resp.Kvs {
		for _, secret := range secrets {
			if bytes.Contains(kv.Value, []byte(secret)) {
				t.Errorf("%s holds %q in the clear", kv.Key, secret)
			}
		}
	}

	// a1's records copied to a2's keys: they do not open there.
	linkstest.Link(t, s, "u2", "a2")
	for _, rel := range []string{record.TokenKey("a1"), record.AccountKey("a1")} {
		v, _, _ := rawGet(t, s, rel)
		to := strings.Replace(rel, "a1", "a2", 1)
		if _, err := s.cli.Put(ctx, s.key(to), string(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Token(ctx, "a2"); !errors.Is(err, links.ErrCorrupt) || !strings.Contains(err.Error(), s.key(record.TokenKey("a2"))) {
		t.Errorf("Token of a moved value = %v, want ErrCorrupt naming the key", err)
	}
	if _, err := s.Account(ctx, "a2"); !errors.Is(err, links.ErrCorrupt) {
		t.Errorf("Account of a moved value = %v, want ErrCorrupt", err)
	}
}

// TestSealer: a value opens under its key with its encryption key only,
// and not once altered.
func TestSealer(t *testing.T) {
	a, err := newSealer(testKey)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newSealer(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	v := a.sealValue("t/a1", []byte("plain"))
	if got, err := a.openValue("t/a1", v); err != nil || string(got) != "plain" {
		t.Fatalf("openValue = %q, %v", got, err)
	}
	if w := a.sealValue("t/a1", []byte("plain")); bytes.Equal(v, w) {
		t.Error("two seals of one value are equal: the nonce is not random")
	}
	flipped := bytes.Clone(v)
	flipped[len(flipped)-1] ^= 1
	for name, open := range map[string]func() ([]byte, error){
		"another key":    func() ([]byte, error) { return b.openValue("t/a1", v) },
		"another record": func() ([]byte, error) { return a.openValue("t/a2", v) },
		"altered":        func() ([]byte, error) { return a.openValue("t/a1", flipped) },
		"truncated":      func() ([]byte, error) { return a.openValue("t/a1", v[:10]) },
		"plain JSON":     func() ([]byte, error) { return a.openValue("t/a1", []byte(`{"v":1}`)) },
	} {
		if got, err := open(); err == nil {
			t.Errorf("%s: opened as %q", name, got)
		}
	}
}
