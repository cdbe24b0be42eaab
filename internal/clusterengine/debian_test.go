package clusterengine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

// TestDebianEtcdLeaderKilled runs pins on accounts spread over three
// members against Debian's etcd server (etcd-server, 3.4 in bookworm),
// three processes of its executable, while the etcd leader is killed
// with SIGKILL, a crash with no leadership handed on, and comes back.
// Pinterest's side of the ledger never has more than the limit in any
// window, every account is served again and pinned after the crash,
// and every pin still in its window is counted by the account's owner.
func TestDebianEtcdLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 15 seconds")
	}
	c := etcdtest.StartBinary(t, 3, etcdtest.DebianEtcd(t))
	h := &harness{t: t, etcd: c, keys: partition.NewKeys("/pinbot-test")}
	var accounts []string
	for i := range 24 {
		accounts = append(accounts, fmt.Sprintf("acct-%02d", i))
	}
	h.start("a")
	h.start("b")
	h.start("c")
	h.waitServed(accounts, 20*time.Second)

	l := &ledger{pins: map[string][]time.Time{}}
	ctx, stop := context.WithCancel(context.Background())
	wg := workload(ctx, h, accounts, l, 8)
	defer func() { stop(); wg.Wait() }()
	phase := func(name string, d time.Duration) {
		t.Logf("phase %s", name)
		time.Sleep(d) // the workload runs for the phase's length
	}
	phase("steady", 2*time.Second)

	lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := c.WaitLeader(lctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	killedAt := time.Now()
	phase("etcd leader killed", 3*time.Second)
	if next, err := c.WaitLeader(lctx); err != nil || next == leader {
		t.Fatalf("leader after member %d was killed: %d, %v", leader, next, err)
	}
	h.waitServed(accounts, 20*time.Second)

	c.Restart(leader)
	phase("killed member back", 3*time.Second)
	h.waitServed(accounts, 20*time.Second)
	stop()
	wg.Wait()

	total := l.check(t)
	if total < len(accounts)*testLimit {
		t.Fatalf("%d pins in all, want at least %d: the workload barely ran", total, len(accounts)*testLimit)
	}
	for _, acct := range accounts {
		if l.since(acct, killedAt) == 0 {
			t.Errorf("account %s got no pin after the etcd leader was killed", acct)
		}
	}
	checkOwnersCount(t, h, l, accounts)
}
