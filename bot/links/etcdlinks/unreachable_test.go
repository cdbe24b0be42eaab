package etcdlinks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/linkstest"
	"github.com/pinbot/pinbot/internal/etcdtest"
)

// TestEtcdStopped: with etcd stopped, every call fails with the error of
// its deadline instead of waiting: the request timeout, or the context's
// when it comes first. Once etcd is back, the store works with what it
// had.
func TestEtcdStopped(t *testing.T) { testEtcdStopped(t, startCluster(t, 1)) }

// testEtcdStopped runs TestEtcdStopped over c, of one member.
func testEtcdStopped(t *testing.T, c *etcdtest.Cluster) {
	cli := c.Client()
	keys := freshKeys()
	s := openStore(t, cli, keys, Options{RequestTimeout: 300 * time.Millisecond})
	// patient waits for etcd as long as its callers' contexts allow.
	patient := openStore(t, cli, keys, Options{RequestTimeout: time.Hour})
	linkstest.Link(t, s, "u1", "a1")
	c.Stop(0)

	bg := context.Background()
	calls := map[string]func(ctx context.Context) error{
		"Ping": s.Ping,
		"User": func(ctx context.Context) error { _, err := s.User(ctx, "u1"); return err },
		"Link": func(ctx context.Context) error {
			return s.Link(ctx, "u1", links.Account{ID: "a2"}, linkstest.TokenFor("a2", 0))
		},
		"Users":    func(ctx context.Context) error { return s.Users(ctx, func(links.User) error { return nil }) },
		"NewState": func(ctx context.Context) error { _, err := s.NewState(ctx, "u1", t0); return err },
		"RememberPinned": func(ctx context.Context) error {
			return s.RememberPinned(ctx, "a1", "b1", []links.PinnedPicture{{Key: "k1", PinURL: "https://pin/1", Until: t0}})
		},
		"PurgeStates": func(ctx context.Context) error { _, err := s.PurgeStates(ctx, t0); return err },
	}
	for name, call := range calls {
		if err := call(bg); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with etcd stopped = %v, want the request timeout's DeadlineExceeded", name, err)
		}
	}

	// A context's deadline comes before a long request timeout.
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	if _, err := patient.User(ctx, "u1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("User with a context deadline = %v, want DeadlineExceeded", err)
	}
	// Open too gives up.
	ctx2, cancel2 := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel2()
	if _, err := Open(ctx2, cli, keys, Options{EncryptionKey: testKey, RequestTimeout: time.Hour}, zerolog.Nop()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Open with etcd stopped = %v, want DeadlineExceeded", err)
	}

	c.Restart(0)
	ctx3, cancel3 := context.WithTimeout(bg, 30*time.Second)
	defer cancel3()
	if u, err := patient.User(ctx3, "u1"); err != nil || u.Active != "a1" {
		t.Fatalf("User after etcd restarted = %+v, %v; want a1", u, err)
	}
}
