package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/clusterconf"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/logtest"
	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
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

// offsetClock is the system clock moved by an offset a test may change.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// until polls cond until it returns "" (nothing wrong), failing the test
// with cond's last complaint after the deadline.
func until(t *testing.T, within time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		wrong := cond()
		if wrong == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(wrong)
		}
		time.Sleep(20 * time.Millisecond) // members move through etcd's watches
	}
}

// settled reports what keeps the members from holding every one of the
// partitions between them, none moving, each seeing all of them.
func settled(parts int, apps ...*App) string {
	total := 0
	for _, a := range apps {
		st := a.node.Member.Status()
		if st.Moving != 0 || st.Members != len(apps) {
			return fmt.Sprintf("member %s: %d partitions moving, %d members seen; want 0 and %d", st.Member, st.Moving, st.Members, len(apps))
		}
		total += st.Held
	}
	if total != parts {
		return fmt.Sprintf("%d partitions held in all, want %d", total, parts)
	}
	return ""
}

// expect is one expected value of a metric.
type expect struct {
	name   string
	labels []string
	want   float64
}

// wrongMetrics scrapes a's metrics and names those that differ from
// wants.
func wrongMetrics(t *testing.T, a *App, wants []expect) string {
	t.Helper()
	s := metricstest.ScrapeHandler(t, a.Metrics.Handler())
	var wrong []string
	for _, w := range wants {
		if got, ok := s.Lookup(w.name, w.labels...); !ok || got != w.want {
			wrong = append(wrong, fmt.Sprintf("%s%v = %v (served: %v), want %v", w.name, w.labels, got, ok, w.want))
		}
	}
	return strings.Join(wrong, "; ")
}

// TestClusterMetricsJoinAndForward: a member alone acquires every
// partition; a second one joins and takes its share by handover; the
// membership's counters and gauges say so on both, the etcd requests
// are timed, and a forwarded batch moves the forward and peer call
// counters of the sender and the served ones of the owner, by outcome.
func TestClusterMetricsJoinAndForward(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cfg1 := clusterConfig(t, dc, ps, etcd.Endpoints(), "m1")
	addr1 := cfg1.Listener.Addr().String()
	a1, err := Build(cfg1)
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close(context.Background())
	until(t, 20*time.Second, func() string {
		if w := settled(8, a1); w != "" {
			return w
		}
		return wrongMetrics(t, a1, []expect{
			{"pinbot_cluster_partitions_acquired_total", nil, 8},
			{"pinbot_cluster_partitions_held", nil, 8},
			{"pinbot_cluster_members", nil, 1},
		})
	})

	a2, err := Build(clusterConfig(t, dc, ps, etcd.Endpoints(), "m2"))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close(context.Background())
	until(t, 20*time.Second, func() string {
		if w := settled(8, a1, a2); w != "" {
			return w
		}
		h1, h2 := float64(len(a1.node.Member.Held())), float64(len(a2.node.Member.Held()))
		if h2 == 0 {
			return "m2 holds no partition"
		}
		// m1 handed m2 exactly what m2 holds; none was lost.
		if w := wrongMetrics(t, a1, []expect{
			{"pinbot_cluster_partitions_acquired_total", nil, 8},
			{"pinbot_cluster_partitions_handed_over_total", nil, h2},
			{"pinbot_cluster_partitions_lost_total", nil, 0},
			{"pinbot_cluster_partitions_held", nil, h1},
			{"pinbot_cluster_members", nil, 2},
			{"pinbot_cluster_deadline_lapses_total", nil, 0},
			{"pinbot_cluster_lease_expiries_total", nil, 0},
			{"pinbot_cluster_fenced_writes_total", nil, 0},
		}); w != "" {
			return "m1: " + w
		}
		if w := wrongMetrics(t, a2, []expect{
			{"pinbot_cluster_partitions_acquired_total", nil, h2},
			{"pinbot_cluster_partitions_handed_over_total", nil, 0},
			{"pinbot_cluster_partitions_held", nil, h2},
			{"pinbot_cluster_members", nil, 2},
		}); w != "" {
			return "m2: " + w
		}
		return ""
	})

	// Served over the listener too, with the lease's time left and the
	// etcd requests timed by method.
	s := metricstest.Scrape(t, "http://"+addr1+metrics.Path)
	if left := s.Get("pinbot_cluster_lease_remaining_seconds"); left <= 0 || left > 2 {
		t.Errorf("m1's lease remaining = %vs, want within the 2 s lease", left)
	}
	for _, method := range []string{"Txn", "Range", "LeaseGrant"} {
		if n := s.Get("pinbot_cluster_etcd_request_seconds", "method", method); n == 0 {
			t.Errorf("no etcd %s request timed", method)
		}
	}

	// A batch for an account m2 serves, forwarded by m1; one of m1's own
	// accounts, which m1 refuses to forward to itself; a batch m2 fails
	// to read; a method m2 does not serve.
	var theirs, ours string
	for i := range 100 {
		acct := fmt.Sprint(2000 + i)
		switch {
		case theirs == "" && a2.node.Serves(acct):
			theirs = acct
		case ours == "" && a1.node.Serves(acct):
			ours = acct
		}
	}
	if theirs == "" || ours == "" {
		t.Fatalf("accounts of m2: %q, of m1: %q; want one each", theirs, ours)
	}
	body := fmt.Sprintf(`{"interaction":"1","token":"t","user":"42","guild":"7","channel":"8","account":%q,"refs":[]}`, theirs)
	if _, err := a1.peers.Forward(ctx, theirs, "pin", []byte(body)); err != nil {
		t.Fatalf("forwarding to the owner: %v", err)
	}
	if _, err := a1.peers.Forward(ctx, ours, "pin", []byte(body)); !errors.Is(err, bot.ErrNotForwarded) {
		t.Fatalf("forwarding an account m1 owns: %v, want ErrNotForwarded", err)
	}
	if _, err := a1.peers.Forward(ctx, theirs, "pin", []byte("not json")); err == nil || errors.Is(err, bot.ErrNotForwarded) {
		t.Fatalf("forwarding a batch the owner cannot read: %v, want the owner's error", err)
	}
	if _, err := a1.peers.Forward(ctx, theirs, "no-such-method", nil); !errors.Is(err, bot.ErrNotForwarded) {
		t.Fatalf("forwarding an unknown method: %v, want ErrNotForwarded", err)
	}
	until(t, 10*time.Second, func() string {
		if w := wrongMetrics(t, a1, []expect{
			{"pinbot_cluster_forwards_total", []string{"method", "pin", "outcome", "ok"}, 1},
			{"pinbot_cluster_forwards_total", []string{"method", "pin", "outcome", "refused"}, 1},
			{"pinbot_cluster_forwards_total", []string{"method", "pin", "outcome", "error"}, 1},
			{"pinbot_cluster_forwards_total", []string{"method", "pin", "outcome", "unknown"}, 0},
			{"pinbot_cluster_forwards_total", []string{"method", "other", "outcome", "refused"}, 1},
			{"pinbot_cluster_peer_calls_total", []string{"method", "pin", "outcome", "ok"}, 1},
			{"pinbot_cluster_peer_calls_total", []string{"method", "pin", "outcome", "error"}, 1},
			{"pinbot_cluster_peer_calls_total", []string{"method", "other", "outcome", "refused"}, 1},
			{"pinbot_cluster_peer_call_seconds", []string{"method", "pin"}, 2},
		}); w != "" {
			return "m1: " + w
		}
		if w := wrongMetrics(t, a2, []expect{
			{"pinbot_cluster_peer_served_total", []string{"method", "pin", "outcome", "ok"}, 1},
			{"pinbot_cluster_peer_served_total", []string{"method", "pin", "outcome", "error"}, 1},
			{"pinbot_cluster_peer_refusals_total", []string{"reason", "unknown_method"}, 1},
			{"pinbot_cluster_peer_calls_total", []string{"method", "pin", "outcome", "ok"}, 0},
		}); w != "" {
			return "m2: " + w
		}
		return ""
	})
}

// TestClusterClockSkew: a member whose clock runs 2 s ahead of the
// other's, beyond the 1 s the members' clocks may disagree by, makes the
// other's /readyz name it, logged once however many rounds find it, and
// its offset shows in the metrics; with the clock put right, /readyz
// drops it and the recovery is logged.
func TestClusterClockSkew(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	logs := &logtest.Buffer{}
	cfg1 := clusterConfig(t, dc, ps, etcd.Endpoints(), "m1")
	cfg1.Log = zerolog.New(logs).Level(zerolog.InfoLevel)
	base1 := "http://" + cfg1.Listener.Addr().String()
	a1, err := Build(cfg1)
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close(context.Background())
	ahead := &offsetClock{}
	ahead.off.Store(int64(2 * time.Second))
	cfg2 := clusterConfig(t, dc, ps, etcd.Endpoints(), "m2")
	cfg2.Cluster.Clock = ahead
	a2, err := Build(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close(context.Background())
	until(t, 20*time.Second, func() string { return settled(8, a1, a2) })

	const skewed = "clock skew with m2 beyond 1s"
	const episode = "a peer's clock is further from this member's"
	const recovered = "the peers' clocks are back within the bound"
	readyz := func() readyBody {
		t.Helper()
		_, body := get(t, base1+ReadyPath)
		var r readyBody
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("/readyz answered %q: %v", body, err)
		}
		return r
	}

	a1.peers.skew.round(ctx)
	a1.peers.skew.round(ctx)
	if r := readyz(); r.Ready || !slices.Contains(r.Failing, skewed) {
		t.Fatalf("m1's /readyz with m2 2 s ahead: %+v, want it to name %q", r, skewed)
	}
	if n := strings.Count(logs.String(), episode); n != 1 {
		t.Errorf("the skew was logged %d times over two rounds, want once:\n%s", n, logs)
	}
	s := metricstest.ScrapeHandler(t, a1.Metrics.Handler())
	if off := s.Get("pinbot_cluster_peer_clock_offset_seconds", "peer", "m2"); off < 1.5 || off > 2.5 {
		t.Errorf("m2's clock offset = %vs, want about 2", off)
	}
	if e, ok := s.Lookup("pinbot_cluster_peer_clock_offset_error_seconds", "peer", "m2"); !ok || e < 0 || e > 0.5 {
		t.Errorf("m2's clock offset error = %vs (served: %v), want a fraction of a second", e, ok)
	}
	// m2 sees m1 as far behind.
	a2.peers.skew.round(ctx)
	if f := a2.peers.ready(); !slices.Contains(f, "clock skew with m1 beyond 1s") {
		t.Errorf("m2's cluster readiness: %v, want the skew with m1 named", f)
	}

	ahead.off.Store(0)
	a1.peers.skew.round(ctx)
	if r := readyz(); slices.Contains(r.Failing, skewed) {
		t.Fatalf("m1's /readyz with the clocks put right: %+v, still names the skew", r)
	}
	if n := strings.Count(logs.String(), recovered); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, logs)
	}
	if f := a1.peers.ready(); len(f) != 0 {
		t.Errorf("m1's cluster readiness with the clocks put right: %v", f)
	}
}
