//go:build !race && unix

// The pinbot processes these tests start open real disgo gateway
// connections (whose close races with their heartbeat, upstream): the
// children are this test binary, built without -race. They run in
// `make gateway`, and longer in `make soak-cluster`.

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/bot/web/webtest"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

const (
	// clusterCyclesEnv sets the cycles of TestDisgoGatewayCluster (make
	// soak-cluster: 100); clusterSeedEnv replays a run's faults.
	clusterCyclesEnv = "PINBOT_CLUSTER_SOAK_CYCLES"
	clusterSeedEnv   = "PINBOT_CLUSTER_SOAK_SEED"
	// clusterFaultsEnv, when set, picks the faults of the cycles by
	// their short names, comma-separated (kill,pause,term,leader,majority).
	clusterFaultsEnv = "PINBOT_CLUSTER_SOAK_FAULTS"
	// clusterLogEnv, when set, is the members' log level (PINBOT_LOG_LEVEL;
	// info otherwise): their logs are shown when the test fails.
	clusterLogEnv = "PINBOT_CLUSTER_SOAK_LOG_LEVEL"
	// clusterLogDirEnv, when set, is a directory where a failed run
	// writes every member's whole log, a file per run (the test's output
	// shows the end of each only).
	clusterLogDirEnv = "PINBOT_CLUSTER_SOAK_LOG_DIR"
	clusterMembers   = 3
	clusterShards    = 3
	// clusterRecovery is how soon after a member's loss its partitions
	// and shards must be served again.
	clusterRecovery = 5 * time.Second
)

// The faults of the cluster scenarios, one per cycle.
const (
	faultKill     = "SIGKILL of a member"
	faultPause    = "SIGSTOP of a member past its lease, then SIGCONT"
	faultTerm     = "SIGTERM of a member (handover), then a start"
	faultLeader   = "the etcd leader stopped, then back"
	faultMajority = "etcd's majority lost, then back"
)

var clusterFaults = []string{faultKill, faultPause, faultTerm, faultLeader, faultMajority}

// faultNames are the faults' short names, for clusterFaultsEnv.
var faultNames = map[string]string{"kill": faultKill, "pause": faultPause, "term": faultTerm, "leader": faultLeader, "majority": faultMajority}

// clusterMember is one member's address, environment and runs.
type clusterMember struct {
	id   string // PINBOT_CLUSTER_ADDR, its member id
	env  []string
	cur  *child // the running process, nil while down
	runs []*child
}

// clusterRun is a cluster of pinbot processes over an etcd inside the
// test, between the stand-ins.
type clusterRun struct {
	t       *testing.T
	ctx     context.Context
	s       *soak
	etcd    *etcdtest.Cluster
	cli     *clientv3.Client
	members []*clusterMember
	// failovers are how long the cluster took to serve every partition
	// again after each SIGKILL.
	failovers []time.Duration
	// mayLose are the interactions fired before a fault that killed or
	// paused the member that may have received them: Discord's delivery
	// to a dead session is lost with it, so they may stay unanswered.
	mayLose map[snowflake.ID]bool
}

func (r *clusterRun) start(i int) {
	r.t.Helper()
	m := r.members[i]
	m.cur = startChild(r.ctx, r.t, m.env)
	m.runs = append(m.runs, m.cur)
}

func (r *clusterRun) live() []string {
	var ids []string
	for _, m := range r.members {
		if m.cur != nil {
			ids = append(ids, m.id)
		}
	}
	return ids
}

// settled waits until the live members, and only they, are registered,
// every partition and gateway shard is held by one of them, each holds
// some partitions, and every shard's connection is ready at Discord's.
// It returns how long that took.
func (r *clusterRun) settled(within time.Duration) time.Duration {
	r.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.ctx, within)
	defer cancel()
	keys := partition.NewKeys(clusterPrefix)
	want := r.live()
	var last string
	for {
		st, err := readClusterStatus(ctx, r.cli, keys)
		if err == nil {
			var ids []string
			ok := st.stored && st.unowned == 0 && st.strays == 0 && st.shardsUnowned == 0 && st.shardStrays == 0
			for _, m := range st.members {
				ids = append(ids, m.info.ID)
				ok = ok && m.held > 0
			}
			slices.Sort(ids)
			ok = ok && slices.Equal(ids, want)
			if ok {
				for shard := range clusterShards {
					if _, err := r.s.dc.WaitShardReady(ctx, shard); err != nil {
						r.t.Fatalf("%s: gateway shard %d not ready within %v: %v", r.s.phase, shard, within, err)
					}
				}
				return time.Since(start)
			}
			last = fmt.Sprintf("members %v (want %v), %d partitions and %d shards unowned, %d and %d held by members gone",
				ids, want, st.unowned, st.shardsUnowned, st.strays, st.shardStrays)
		} else {
			last = fmt.Sprintf("%s (then reading the status: %v)", last, err)
		}
		select {
		case <-ctx.Done():
			r.t.Fatalf("%s: the cluster did not settle within %v: %s", r.s.phase, within, last)
		case <-time.After(50 * time.Millisecond): // ownership moves through etcd's watches
		}
	}
}

// failover waits, after member dead was killed, until the cluster serves
// every partition and shard again, logs when its lease expired, its
// partitions were all held again and every shard was ready, and returns
// the last.
func (r *clusterRun) failover(dead string, within time.Duration) time.Duration {
	r.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.ctx, within)
	defer cancel()
	keys := partition.NewKeys(clusterPrefix)
	var gone, owned time.Duration
	var last string
	for owned == 0 {
		st, err := readClusterStatus(ctx, r.cli, keys)
		last = fmt.Sprint(err)
		if err == nil {
			last = fmt.Sprintf("%d members, %d partitions unowned, %d held by members gone", len(st.members), st.unowned, st.strays)
			present := false
			for _, m := range st.members {
				present = present || m.info.ID == dead
			}
			if !present && gone == 0 {
				gone = time.Since(start)
			}
			if gone > 0 && st.unowned == 0 && st.strays == 0 {
				owned = time.Since(start)
			}
		}
		select {
		case <-ctx.Done():
			r.t.Fatalf("%s: the partitions not all held again within %v (lease gone after %v): %s", r.s.phase, within, gone, last)
		case <-time.After(20 * time.Millisecond): // ownership moves through etcd's watches
		}
	}
	for shard := range clusterShards {
		if _, err := r.s.dc.WaitShardReady(ctx, shard); err != nil {
			r.t.Fatalf("%s: gateway shard %d not ready within %v: %v", r.s.phase, shard, within, err)
		}
	}
	took := time.Since(start)
	r.t.Logf("%s: the killed member's lease expired after %v, its partitions were held again after %v, every shard ready after %v",
		r.s.phase, gone.Round(time.Millisecond), owned.Round(time.Millisecond), took.Round(time.Millisecond))
	return took
}

// link links u's account as linkWithBoard does. Right after the members
// start, partitions still move between them (each member took what it
// found free before the others registered); a /settings of an account
// whose partition is moving reads no count and lists no boards, as a
// user would see and try again: link tries /settings again, for a while.
func (r *clusterRun) link(u *soakUser, inv func(discordtest.InvocationData) discordtest.Invocation) []*discordtest.Interaction {
	r.t.Helper()
	ctx, s := r.ctx, r.s
	var all []*discordtest.Interaction
	in, rp := reply(ctx, r.t, s.dc, inv(discordtest.ChatInput{Name: "link"}))
	all = append(all, in)
	mm := linkURL.FindStringSubmatch(rp.Data.Content)
	if mm == nil {
		r.t.Fatalf("/link answered %q, want an address", rp.Data.Content)
	}
	b := webtest.NewBrowser(nil)
	page, err := b.Get(ctx, mm[1])
	if err != nil || page.Title != "Confirm the link" {
		r.t.Fatalf("OAuth callback: %v %d %q", err, page.Status, page.Message)
	}
	if page, err = b.Submit(ctx, page, webtest.Confirm); err != nil || !strings.Contains(page.Message, "Linked Pinterest account "+u.name) {
		r.t.Fatalf("confirmation: %v %d %q", err, page.Status, page.Message)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		in, rp = reply(ctx, r.t, s.dc, inv(discordtest.ChatInput{Name: "settings"}))
		all = append(all, in)
		if strings.Contains(string(rp.Data.Components), "/settings/board/") {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("/settings of %s lists no boards 30 s after the members started: %q", u.name, rp.Data.Content)
		}
		r.wait(500 * time.Millisecond) // as a user tries again
	}
	boardMenu := menuID(r.t, rp, "/settings/board/")
	in, rp = reply(ctx, r.t, s.dc, inv(discordtest.SelectMenu{CustomID: boardMenu, Values: []string{u.boardID}, MessageID: rp.MessageID}))
	all = append(all, in)
	if want := fmt.Sprintf("Default board for @%s is now **%s**", u.name, u.boardName); !strings.Contains(rp.Data.Content, want) {
		r.t.Fatalf("board menu: %q, want %q", rp.Data.Content, want)
	}
	return all
}

// signal sends sig to member i's process.
func (r *clusterRun) signal(i int, sig syscall.Signal) {
	r.t.Helper()
	if err := r.members[i].cur.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("%v to member %d: %v", sig, i, err)
	}
}

func (r *clusterRun) kill(i int) {
	r.t.Helper()
	r.members[i].cur.kill()
	r.members[i].cur = nil
}

// wait waits d: the length of a fault (the point of the test, not a wait
// for something to happen).
func (r *clusterRun) wait(d time.Duration) {
	r.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-r.ctx.Done():
		r.t.Fatal(r.ctx.Err())
	}
}

// clusterEnv is the environment of member i: the stand-ins, its own data
// directory and addresses, the cluster's etcd and keys, the soak's limit.
func clusterEnv(t *testing.T, dc *discordtest.Server, ps *pinteresttest.Server, dir, keyFile, clusterKeyFile string, endpoints []string, i int) (id string, env []string) {
	t.Helper()
	id = freeAddr(t)
	env = append(standInEnv(t, dc, ps, ps.URL+"/v5", keyFile, filepath.Join(dir, fmt.Sprintf("member%d", i))),
		"PINBOT_SHARDS="+strconv.Itoa(clusterShards),
		"PINBOT_ETCD_ENDPOINTS="+strings.Join(endpoints, ","),
		"PINBOT_CLUSTER_ADDR="+id,
		"PINBOT_CLUSTER_KEY_FILE="+clusterKeyFile,
		"PINBOT_PIN_LIMIT="+strconv.Itoa(soakLimit), "PINBOT_PIN_WINDOW="+soakWindow.String(),
		"PINBOT_USER_RATE=off", "PINBOT_HTTP_RATE=off",
		"PINBOT_LEASE="+soakLease.String(), "PINBOT_SLOT_MARGIN="+soakSlotMargin.String(),
		"PINBOT_LISTING_LAG="+soakListingLag.String())
	if lvl := os.Getenv(clusterLogEnv); lvl != "" {
		env = append(env, "PINBOT_LOG_LEVEL="+lvl)
	}
	return id, env
}

// TestDisgoGatewayCluster runs three pinbot processes as members of one
// cluster, over three etcd members inside the test, between the Discord
// and Pinterest stand-ins, under a load of /pin batches from many users
// of guilds spread over the shards, pins queued and due. Each cycle
// brings one fault: a member killed (SIGKILL), paused past its lease
// (SIGSTOP, then SIGCONT), stopped gracefully and started again, the
// etcd leader stopped, etcd's majority lost. After each: the cluster
// serves every partition again (after a kill, within clusterRecovery),
// Pinterest never held more than the limit of any account in any
// window, no picture is pinned twice, every queued pin is made once, the
// counts the bot shows include every pin Pinterest made, every
// interaction is answered (but those a killed or paused member may have
// received), no reply asks to link again, and Discord never answers a
// global 429.
func TestDisgoGatewayCluster(t *testing.T) {
	t.Parallel()
	cycles, seed := soakRun(t, clusterCyclesEnv, len(clusterFaults), clusterSeedEnv)
	nUsers := 12
	t.Logf("%d cycles, %d users, seed %d (%s=%d replays it)", cycles, nUsers, seed, clusterSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0x636c7573746572))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+time.Duration(cycles)*45*time.Second)
	defer cancel()

	etcd := etcdtest.Start(t, 3)
	// Discord's global limit, enforced over the members together; an
	// identify bucket per shard, so that a member's loss costs one
	// identify window (a bot with max_concurrency 1 waits 5 s more for
	// each further shard it lost: Discord's limit).
	dc := discordtest.NewServer(discordtest.WithShardCount(clusterShards), discordtest.WithMaxConcurrency(clusterShards),
		discordtest.WithGlobalRateLimit(50, time.Second))
	defer dc.Close()
	ps := pinteresttest.NewServer()
	defer ps.Close()

	s := &soak{t: t, ctx: ctx, dc: dc, ps: ps, rng: rng, phase: "start",
		guilds: map[snowflake.ID]string{}, pictures: map[string]picture{},
		pinners: map[snowflake.ID]*soakUser{}, queued: map[pinKey]*soakQueued{}, owners: map[snowflake.ID]*soakUser{},
		movingCounts: true}
	// Guilds on every shard: the first two channels in one guild, the
	// third in another, as the soak's queue waves expect, then more.
	gs := []soakGuild{{"guild0", []string{"c0", "c1"}}}
	for g := 1; g < 2*clusterShards; g++ {
		gs = append(gs, soakGuild{fmt.Sprintf("guild%d", g), []string{"c0"}})
	}
	s.addUsers(nUsers, "clu", 7100, s.addGuilds(gs...))

	dir := t.TempDir()
	keyFile := writeKey(t, dir, 32, 0o600)
	ckDir := filepath.Join(dir, "cluster")
	if err := os.Mkdir(ckDir, 0o700); err != nil {
		t.Fatal(err)
	}
	clusterKeyFile := writeKey(t, ckDir, 32, 0o600)
	r := &clusterRun{t: t, ctx: ctx, s: s, etcd: etcd, cli: etcd.Client(), mayLose: map[snowflake.ID]bool{}}
	for i := range clusterMembers {
		id, env := clusterEnv(t, dc, ps, dir, keyFile, clusterKeyFile, etcd.Endpoints(), i)
		r.members = append(r.members, &clusterMember{id: id, env: env})
	}
	slices.SortFunc(r.members, func(a, b *clusterMember) int { return strings.Compare(a.id, b.id) })
	defer func() {
		if t.Failed() {
			for i, m := range r.members {
				for k, c := range m.runs {
					t.Logf("member %d (%s), run %d:\n%s", i, m.id, k+1, tail(c.stderr(), 100000))
					if dir := os.Getenv(clusterLogDirEnv); dir != "" {
						name := filepath.Join(dir, fmt.Sprintf("member%d-run%d.log", i, k+1))
						if err := os.WriteFile(name, []byte(c.stderr()), 0o600); err != nil {
							t.Logf("%s: %v", clusterLogDirEnv, err)
						}
					}
				}
			}
		}
	}()
	for i := range r.members {
		r.start(i)
	}
	r.settled(30 * time.Second)

	for _, u := range s.users {
		ps.SetLoggedIn(u.account)
		inv := func(d discordtest.InvocationData) discordtest.Invocation { return s.inv(u, s.chans[0], d) }
		s.all = append(s.all, r.link(u, inv)...)
		s.queueByDefault(u, inv)
	}
	s.ledger()

	order := slices.Clone(clusterFaults)
	if v := os.Getenv(clusterFaultsEnv); v != "" {
		order = nil
		for _, name := range strings.Split(v, ",") {
			f, ok := faultNames[name]
			if !ok {
				t.Fatalf("%s=%q: unknown fault %q", clusterFaultsEnv, v, name)
			}
			order = append(order, f)
		}
	}
	for c := 1; c <= cycles; c++ {
		s.cycle = c
		fault := order[(c-1)%len(order)]
		if c > len(order) {
			fault = order[rng.IntN(len(order))]
		}
		s.phase = fmt.Sprintf("cycle %d (%s)", c, fault)
		queuers, bursters := s.roles()
		if len(queuers) == 0 {
			t.Fatalf("%s: no account has room for three pins (counts %v)", s.phase, s.ledger())
		}
		s.queueWave(queuers)
		var burst []*discordtest.Interaction
		for _, u := range bursters {
			burst = append(burst, s.pin(u, s.chans[rng.IntN(len(s.chans))], 1+rng.IntN(2), ""))
		}
		r.fault(fault, rng, burst)
		r.settleBurst(burst)
		s.waitQueued()
		r.check()
	}
	if len(r.failovers) > 0 {
		slices.Sort(r.failovers)
		t.Logf("failover after SIGKILL, %d kills: p50 %v, max %v", len(r.failovers), r.failovers[len(r.failovers)/2], r.failovers[len(r.failovers)-1])
	}

	if n := dc.GlobalRateLimited(); n > 0 {
		t.Errorf("Discord answered %d global 429s: the members together went over the global limit", n)
	}

	// The end: every member stops gracefully.
	for _, m := range r.members {
		if m.cur != nil {
			m.cur.stop(ctx)
		}
	}
}

// fault brings one fault to the cluster, with the burst of /pin batches
// in flight, and waits until the cluster serves again.
func (r *clusterRun) fault(fault string, rng *rand.Rand, burst []*discordtest.Interaction) {
	r.t.Helper()
	i := rng.IntN(len(r.members))
	switch fault {
	case faultKill:
		for _, in := range burst {
			r.mayLose[in.ID] = true
		}
		r.t.Logf("%s: killing member %d (%s) at %s", r.s.phase, i, r.members[i].id, time.Now().UTC().Format("15:04:05.000"))
		identified, resumed := r.identifies()
		r.kill(i)
		took := r.failover(r.members[i].id, clusterRecovery+10*time.Second)
		r.failovers = append(r.failovers, took)
		if took > clusterRecovery {
			r.t.Errorf("%s: the cluster served every partition again %v after the kill, want within %v", r.s.phase, took, clusterRecovery)
		}
		// The killed member's shards resume the sessions it checkpointed:
		// no IDENTIFY, which would wait for Discord's identify window.
		idAfter, resAfter := r.identifies()
		r.t.Logf("%s: %d shards resumed, %d identified", r.s.phase, resAfter-resumed, idAfter-identified)
		if idAfter > identified {
			r.t.Errorf("%s: %d gateway shards identified anew after the kill, want the killed member's resumed", r.s.phase, idAfter-identified)
		}
		r.start(i) // its id is free once its lease expired: it joins at once
		r.settled(30 * time.Second)
	case faultPause:
		for _, in := range burst {
			r.mayLose[in.ID] = true
		}
		r.signal(i, syscall.SIGSTOP)
		paused := r.members[i].cur
		r.members[i].cur = nil
		r.settled(30 * time.Second)
		r.signal2(paused, syscall.SIGCONT)
		r.members[i].cur = paused
		r.settled(30 * time.Second)
	case faultTerm:
		r.members[i].cur.stop(r.ctx)
		r.members[i].cur = nil
		r.settled(30 * time.Second)
		r.start(i)
		r.settled(30 * time.Second)
	case faultLeader:
		leader, err := r.etcd.WaitLeader(r.ctx)
		if err != nil {
			r.t.Fatal(err)
		}
		r.etcd.Stop(leader)
		r.wait(2 * time.Second)
		r.etcd.Restart(leader)
		r.settled(30 * time.Second)
	case faultMajority:
		leader, err := r.etcd.WaitLeader(r.ctx)
		if err != nil {
			r.t.Fatal(err)
		}
		down := []int{leader, (leader + 1) % 3}
		for _, e := range down {
			r.etcd.Stop(e)
		}
		r.wait(3 * time.Second)
		for _, e := range down {
			r.etcd.Restart(e)
		}
		r.settled(30 * time.Second)
	default:
		r.t.Fatalf("unknown fault %q", fault)
	}
}

// identifies returns the IDENTIFYs and the successful RESUMEs Discord
// has had of the cluster's shards.
func (r *clusterRun) identifies() (identified, resumed int) {
	for shard := range clusterShards {
		identified += r.s.dc.Identifies(shard)
	}
	for _, ss := range r.s.dc.Sessions() {
		resumed += ss.Resumes
	}
	return identified, resumed
}

func (r *clusterRun) signal2(c *child, sig syscall.Signal) {
	r.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("%v: %v", sig, err)
	}
}

// settleBurst waits for the answers of the burst: each must come, but
// for those a killed or paused member may have received, and be sound.
func (r *clusterRun) settleBurst(burst []*discordtest.Interaction) {
	r.t.Helper()
	for _, in := range burst {
		ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
		rs, err := in.Wait(ctx, 2)
		cancel()
		if err != nil {
			if r.mayLose[in.ID] {
				continue
			}
			r.t.Fatalf("%s: /pin %d (%s) unanswered: %v; responses %+v", r.s.phase, in.ID, r.s.owners[in.ID].name, err, in.Responses())
		}
		if rs[1].Data != nil {
			r.s.check(in, rs[1].Data.Content)
		}
	}
}

// check is what must hold after every cycle.
func (r *clusterRun) check() {
	r.t.Helper()
	s := r.s
	seen := map[pinKey]int{}
	for _, p := range s.ps.Pins() {
		if k, ok := s.keyOf(p); ok {
			seen[k]++
			if seen[k] == 2 {
				r.t.Errorf("%s: Pinterest holds %v twice: a pin was sent twice", s.phase, k)
			}
		}
	}
	if m := s.missing(); len(m) > 0 {
		r.t.Errorf("%s: %d queued pins never made, such as %v", s.phase, len(m), m[0])
	}
	for _, in := range s.all {
		for _, rs := range in.Responses() {
			if rs.Data != nil && strings.Contains(rs.Data.Content, "/link again") {
				r.t.Errorf("%s: interaction %d asks to link again: %q", s.phase, in.ID, rs.Data.Content)
			}
		}
	}
	s.ledger() // the limit in every window, and every pin counted
}

// tail returns the last n lines of text.
func tail(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
