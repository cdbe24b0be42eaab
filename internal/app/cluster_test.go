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
	"github.com/pinbot/pinbot/internal/clusterrpc"
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
	// Every method the bot forwards is served by the owner: a board
	// listing of an account with no token says it needs /link again.
	ans, err = a1.peers.Forward(ctx, acct, "boards", []byte(fmt.Sprintf(`{"op":"boards","account":%q}`, acct)))
	if err != nil {
		t.Fatalf("forwarding a board listing to the owner: %v", err)
	}
	if !strings.Contains(string(ans), `"relink":true`) {
		t.Fatalf("the owner's board listing of an account without a token: %s, want relink", ans)
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

// TestClusterClockSkew: with two members, a member whose clock runs 2 s
// ahead of the other's, beyond the 1 s the members' clocks may disagree
// by, is the one to give up (the tie goes to the smaller id, m1): m2
// hands every partition to m1 and is not ready, m1 serves them all and
// stays ready, logs the episode once however many rounds find it, and
// shows the offset in its metrics. With the clock put right, m2 takes
// its share again, and the recovery is logged.
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
	base2 := "http://" + cfg2.Listener.Addr().String()
	a2, err := Build(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close(context.Background())
	until(t, 20*time.Second, func() string { return settled(8, a1, a2) })

	const given = "clock beyond 1s from m1: partitions given up"
	const episode = "a peer's clock is further from this member's"
	const recovered = "the peers' clocks are back within the bound"

	a1.peers.skew.round(ctx)
	a1.peers.skew.round(ctx)
	a2.peers.skew.round(ctx)
	until(t, 20*time.Second, func() string {
		if h1, h2 := len(a1.node.Member.Held()), len(a2.node.Member.Held()); h1 != 8 || h2 != 0 {
			return fmt.Sprintf("m1 holds %d partitions, m2 %d; want 8 and 0", h1, h2)
		}
		return wrongMetrics(t, a2, []expect{{"pinbot_cluster_suspended", nil, 1}})
	})
	if r := readyzAt(t, base2); r.Ready || !slices.Contains(r.Failing, given) {
		t.Errorf("m2's /readyz 2 s ahead: %+v, want it to name %q", r, given)
	}
	// The bot is not started here: /readyz names its gateway alone.
	if r := readyzAt(t, base1); slices.ContainsFunc(r.Failing, func(f string) bool { return strings.Contains(f, "clock") }) {
		t.Errorf("m1's /readyz with m2 2 s ahead: %+v, want no clock named: it keeps serving", r)
	}
	if f := a1.peers.ready(); len(f) != 0 {
		t.Errorf("m1's cluster readiness with m2 2 s ahead: %v, want none failing: it keeps serving", f)
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
	if sus := s.Get("pinbot_cluster_suspended"); sus != 0 {
		t.Errorf("m1's suspended gauge = %v, want 0", sus)
	}

	ahead.off.Store(0)
	a1.peers.skew.round(ctx)
	if n := strings.Count(logs.String(), recovered); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, logs)
	}
	resumeWithin(t, ctx, a2, skewResumeRounds)
	until(t, 20*time.Second, func() string {
		if w := settled(8, a1, a2); w != "" {
			return w
		}
		if len(a2.node.Member.Held()) == 0 {
			return "m2 holds no partition after its clock was put right"
		}
		return wrongMetrics(t, a2, []expect{{"pinbot_cluster_suspended", nil, 0}})
	})
	if f := a2.peers.ready(); len(f) != 0 {
		t.Errorf("m2's cluster readiness with the clocks put right: %v", f)
	}
}

// TestClusterClockOutlier: of three members, the one whose clock runs
// 3 s ahead of the two others' gives up its partitions and is not ready;
// the two others serve them all and stay ready. Put right, it takes its
// share again.
func TestClusterClockOutlier(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	dc, ps := discordtest.NewServer(), pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ahead := &offsetClock{}
	var apps []*App
	var bases []string
	for _, id := range []string{"m1", "m2", "m3"} {
		cfg := clusterConfig(t, dc, ps, etcd.Endpoints(), id)
		if id == "m2" {
			cfg.Cluster.Clock = ahead
		}
		bases = append(bases, "http://"+cfg.Listener.Addr().String())
		a, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(context.Background())
		apps = append(apps, a)
	}
	a1, a2, a3 := apps[0], apps[1], apps[2]
	until(t, 30*time.Second, func() string { return settled(8, a1, a2, a3) })
	// The bot's share of Discord's global REST limit counts the three.
	if n := a1.peers.processes(); n != 3 {
		t.Errorf("processes sharing the bot's token, by m1: %d, want 3", n)
	}
	if len(a2.node.Member.Held()) == 0 {
		t.Fatal("m2 holds no partition before its clock is off")
	}

	ahead.off.Store(int64(3 * time.Second))
	for _, a := range apps {
		a.peers.skew.round(ctx)
	}
	const given = "clock beyond 1s from m1, m3: partitions given up"
	until(t, 20*time.Second, func() string {
		h1, h2, h3 := len(a1.node.Member.Held()), len(a2.node.Member.Held()), len(a3.node.Member.Held())
		if h1+h3 != 8 || h2 != 0 {
			return fmt.Sprintf("m1 holds %d partitions, m2 %d, m3 %d; want m2 none", h1, h2, h3)
		}
		for _, a := range apps {
			if st := a.node.Member.Status(); st.Moving != 0 || st.Members != 3 {
				return fmt.Sprintf("%s: %d moving, %d members seen", st.Member, st.Moving, st.Members)
			}
		}
		return ""
	})
	if r := readyzAt(t, bases[1]); r.Ready || !slices.Contains(r.Failing, given) {
		t.Errorf("m2's /readyz 3 s ahead: %+v, want it to name %q", r, given)
	}
	for _, a := range []*App{a1, a3} {
		if f := a.peers.ready(); len(f) != 0 {
			t.Errorf("%s's cluster readiness: %v, want none failing", a.node.Member.ID(), f)
		}
	}
	if w := wrongMetrics(t, a2, []expect{{"pinbot_cluster_suspended", nil, 1}}); w != "" {
		t.Error("m2: " + w)
	}
	// Every account is served by m1 or m3, which forward to each other.
	for i := range 40 {
		acct := fmt.Sprint(3000 + i)
		if a2.node.Serves(acct) || a1.node.Serves(acct) == a3.node.Serves(acct) {
			t.Fatalf("account %s served by m1: %v, m2: %v, m3: %v; want m1 or m3 alone",
				acct, a1.node.Serves(acct), a2.node.Serves(acct), a3.node.Serves(acct))
		}
	}

	ahead.off.Store(0)
	resumeWithin(t, ctx, a2, skewResumeRounds)
	until(t, 30*time.Second, func() string {
		if w := settled(8, a1, a2, a3); w != "" {
			return w
		}
		if len(a2.node.Member.Held()) == 0 {
			return "m2 holds no partition after its clock was put right"
		}
		return ""
	})
	if f := a2.peers.ready(); len(f) != 0 {
		t.Errorf("m2's cluster readiness with its clock put right: %v", f)
	}
}

// resumeWithin runs a's clock rounds until its member is no longer
// suspended, failing the test if that takes more than rounds. The
// program's own rounds run too: it may take fewer.
func resumeWithin(t *testing.T, ctx context.Context, a *App, rounds int) {
	t.Helper()
	for n := 1; ; n++ {
		a.peers.skew.round(ctx)
		if _, ok := a.node.Member.Suspended(); !ok {
			return
		}
		if n == rounds {
			t.Fatalf("%s still suspended after %d rounds within the bound", a.node.Member.ID(), n)
		}
	}
}

// readyzAt returns the /readyz answer of the program at base.
func readyzAt(t *testing.T, base string) readyBody {
	t.Helper()
	_, body := get(t, base+ReadyPath)
	var r readyBody
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/readyz answered %q: %v", body, err)
	}
	return r
}

// TestOutOfBound: the member out of bound is the one beyond the bound
// from more of its measured peers than it is within (itself counted);
// at a tie the side holding the smallest id keeps serving.
func TestOutOfBound(t *testing.T) {
	off := func(d time.Duration) clusterrpc.Offset { return clusterrpc.Offset{Offset: d} }
	for i, tc := range []struct {
		self    string
		offsets map[string]clusterrpc.Offset
		out     bool
		beyond  []string
	}{
		{"m1", nil, false, nil},
		{"m1", map[string]clusterrpc.Offset{"m2": off(time.Second)}, false, nil},
		// Two members: the tie goes to the smaller id.
		{"m1", map[string]clusterrpc.Offset{"m2": off(2 * time.Second)}, false, []string{"m2"}},
		{"m2", map[string]clusterrpc.Offset{"m1": off(-2 * time.Second)}, true, []string{"m1"}},
		// Half the round trip counts: 0.9 s ± 0.2 s may be 1.1 s.
		{"m2", map[string]clusterrpc.Offset{"m1": {Offset: -900 * time.Millisecond, RTT: 400 * time.Millisecond}}, true, []string{"m1"}},
		// Three members, m2 ahead: m2 alone is out.
		{"m2", map[string]clusterrpc.Offset{"m1": off(-3 * time.Second), "m3": off(-3 * time.Second)}, true, []string{"m1", "m3"}},
		{"m1", map[string]clusterrpc.Offset{"m2": off(3 * time.Second), "m3": {}}, false, []string{"m2"}},
		{"m3", map[string]clusterrpc.Offset{"m1": {}, "m2": off(3 * time.Second)}, false, []string{"m2"}},
		// Two halves: the half with m1 keeps serving.
		{"m2", map[string]clusterrpc.Offset{"m1": {}, "m3": off(3 * time.Second), "m4": off(3 * time.Second)}, false, []string{"m3", "m4"}},
		{"m4", map[string]clusterrpc.Offset{"m1": off(-3 * time.Second), "m2": off(-3 * time.Second), "m3": {}}, true, []string{"m1", "m2"}},
		// Clocks spread wide: each is out.
		{"m2", map[string]clusterrpc.Offset{"m1": off(-1500 * time.Millisecond), "m3": off(1500 * time.Millisecond)}, true, []string{"m1", "m3"}},
	} {
		out, beyond := outOfBound(tc.self, tc.offsets, time.Second)
		if out != tc.out || !slices.Equal(beyond, tc.beyond) {
			t.Errorf("case %d: outOfBound(%s, %v) = %v, %v; want %v, %v", i, tc.self, tc.offsets, out, beyond, tc.out, tc.beyond)
		}
	}
}

// TestSkewHysteresis: a member found out of bound is suspended at once,
// and resumed only after skewResumeRounds rounds in a row within the
// bound; a round out of bound meanwhile starts the count again.
func TestSkewHysteresis(t *testing.T) {
	s := &skewCheck{self: "m2", maxSkew: time.Second, log: zerolog.Nop()}
	beyond := map[string]clusterrpc.Offset{"m1": {Offset: -2 * time.Second}}
	within := map[string]clusterrpc.Offset{"m1": {Offset: -100 * time.Millisecond}}
	const reason = "clock beyond 1s from m1"
	for i, step := range []struct {
		offsets map[string]clusterrpc.Offset
		want    string
	}{
		{within, ""},
		{beyond, reason},
		{within, reason},
		{beyond, reason},
		{within, reason},
		{within, ""},
		{within, ""},
		{beyond, reason},
		{nil, reason}, // no peer measured: nothing says it is out
		{within, ""},
	} {
		if got := s.verdict(step.offsets); got != step.want {
			t.Errorf("step %d: verdict = %q, want %q", i, got, step.want)
		}
	}
}
