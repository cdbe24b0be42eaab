package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/clusterconf"
	"github.com/pinbot/pinbot/internal/etcdtest"
)

var clusterKey = []byte("a shared secret of the members, 32+ bytes")

// clusterConfig is testConfig as a member of the cluster at endpoints.
func clusterConfig(t *testing.T, dc *discordtest.Server, ps *pinteresttest.Server, endpoints []string, member string) Config {
	t.Helper()
	cfg := testConfig(t, dc, ps, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster = &ClusterConfig{
		Endpoints: endpoints, Member: member, Addr: ln.Addr().String(), Listener: ln,
		Key: clusterKey, Partitions: 8, LeaseTTL: 2 * time.Second,
	}
	return cfg
}

// TestClusterMembers: two programs built as members of one cluster share
// the links, each serves the accounts of the partitions it holds, and a
// batch for an account the other owns travels to it through the peers'
// authenticated calls; a member whose settings or keys differ is refused,
// naming them.
func TestClusterMembers(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	a1, err := Build(clusterConfig(t, dc, ps, etcd.Endpoints(), "m1"))
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close(context.Background())
	a2, err := Build(clusterConfig(t, dc, ps, etcd.Endpoints(), "m2"))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close(context.Background())

	// The partitions settle between the two: each holds some, none both.
	deadline := time.Now().Add(20 * time.Second)
	for {
		h1, h2 := a1.node.Member.Held(), a2.node.Member.Held()
		if len(h1) > 0 && len(h2) > 0 && len(h1)+len(h2) == 8 && a1.node.Member.Status().Moving == 0 && a2.node.Member.Status().Moving == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitions held: m1 %v, m2 %v; want all 8 split between them", h1, h2)
		}
		time.Sleep(20 * time.Millisecond) // partitions move through etcd's watches
	}
	var accounts []string
	for i := range 40 {
		accounts = append(accounts, fmt.Sprint(1000+i))
	}
	for _, acct := range accounts {
		if a1.node.Serves(acct) == a2.node.Serves(acct) {
			t.Fatalf("account %s served by m1: %v, by m2: %v; want exactly one", acct, a1.node.Serves(acct), a2.node.Serves(acct))
		}
	}
	if ready := clusterReady(a1.node); len(ready) != 0 {
		t.Fatalf("member m1 not ready: %v", ready)
	}

	// A batch for an account m2 serves, sent by m1: it runs on m2.
	var acct string
	for _, a := range accounts {
		if a2.node.Serves(a) {
			acct = a
			break
		}
	}
	if acct == "" {
		t.Fatal("m2 serves none of the accounts")
	}
	body := fmt.Sprintf(`{"interaction":"1","token":"t","user":"42","guild":"7","channel":"8","account":%q,"refs":[]}`, acct)
	ans, err := a1.peers.Forward(ctx, acct, "pin", []byte(body))
	if err != nil {
		t.Fatalf("forwarding to the owner: %v", err)
	}
	var r struct{ Content string }
	if err := json.Unmarshal(ans, &r); err != nil || r.Content == "" {
		t.Fatalf("the owner's answer %q: %v", ans, err)
	}
	// m1 does not hand m2's account to itself, nor run it when asked.
	if _, err := a1.Bot.HandlePeer(ctx, "pin", []byte(body)); !errors.Is(err, bot.ErrNotForwarded) {
		t.Fatalf("m1 ran a batch of m2's account: %v", err)
	}

	// m1 serves its own accounts without forwarding.
	if _, err := a1.peers.Forward(ctx, acct, "no-such-method", nil); err == nil {
		t.Fatal("an unknown method was served")
	}

	// A third member with another limit and another encryption key is
	// refused, naming both.
	cfg := clusterConfig(t, dc, ps, etcd.Endpoints(), "m3")
	ecfg := actors.DefaultConfig()
	ecfg.Limit = 50
	cfg.Engine = &ecfg
	cfg.EncryptionKey = []byte("fedcba9876543210fedcba9876543210")
	_, err = Build(cfg)
	if !errors.Is(err, clusterconf.ErrMismatch) || !strings.Contains(err.Error(), "encryption key") || !strings.Contains(err.Error(), "pin limit is 100 in the cluster, 50 here") {
		t.Fatalf("Build of a member with another limit and key: %v, want ErrMismatch naming both", err)
	}
}
