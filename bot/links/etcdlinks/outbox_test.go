package etcdlinks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/internal/record"
	"github.com/pinbot/pinbot/internal/limit/schedule/scheduletest"
	"github.com/pinbot/pinbot/internal/partition"
)

// TestMemberOutbox: members' outboxes over one etcd take only their own
// lines and those of members gone, each line by one member.
func TestMemberOutbox(t *testing.T) {
	c := startCluster(t, 1)
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *etcdtestClients)
	}{
		{"LiveMembersKeepTheirLines", testLiveMembersKeepTheirLines},
		{"GoneMemberClaimedOnce", testGoneMemberClaimedOnce},
		{"RestartResumesOwn", testRestartResumesOwn},
		{"PutOverOthersLine", testPutOverOthersLine},
		{"SendersSendOnce", testSendersSendOnce},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, &etcdtestClients{a: c.Client(), b: c.Client()}) })
	}
}

// live registers member under a lease of its own, as internal/cluster
// does, and returns a function that ends it: the member key goes.
func live(t *testing.T, cli *clientv3.Client, keys partition.Keys, member string) (gone func()) {
	t.Helper()
	ctx := context.Background()
	l, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, keys.Member(member), "{}", clientv3.WithLease(l.ID)); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := cli.Revoke(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// outboxLine is the line of job for user 7 under account "acct".
func outboxLine(job uint64) digest.Line {
	return digest.Line{Key: digest.Key{Account: "acct", Job: job}, User: 7, Channel: 9, Text: fmt.Sprintf("✅ job %d", job)}
}

// put stores the lines of jobs through o.
func put(t *testing.T, o digest.Outbox, jobs ...uint64) {
	t.Helper()
	for _, j := range jobs {
		if _, err := o.Put(context.Background(), outboxLine(j)); err != nil {
			t.Fatalf("Put(%d): %v", j, err)
		}
	}
}

// claim returns the jobs of the lines o claims.
func claim(t *testing.T, o digest.SharedOutbox, own bool) []uint64 {
	t.Helper()
	var jobs []uint64
	if err := o.Claim(context.Background(), own, func(l digest.Line) error {
		if l != outboxLine(l.Key.Job) {
			t.Errorf("claimed %+v, want %+v", l, outboxLine(l.Key.Job))
		}
		jobs = append(jobs, l.Key.Job)
		return nil
	}); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return jobs
}

// owner returns the member recorded in the line of job.
func owner(t *testing.T, s *Store, job uint64) string {
	t.Helper()
	rel := record.OutboxKey(digest.Key{Account: "acct", Job: job})
	v, _, ok := rawGet(t, s, rel)
	if !ok {
		t.Fatalf("line %d absent", job)
	}
	var rec record.Outbox
	if err := s.decode(rel, v, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Owner
}

// testLiveMembersKeepTheirLines: lines m1 keeps are not taken by m2
// while m1 lives, neither as m2's own nor as a gone member's; an outbox
// of no member claims nothing.
func testLiveMembersKeepTheirLines(t *testing.T, c *etcdtestClients) {
	keys := freshKeys()
	s1, s2 := openStore(t, c.a, keys, Options{}), openStore(t, c.b, keys, Options{})
	live(t, c.a, keys, "m1")
	live(t, c.b, keys, "m2")
	m1, m2 := s1.MemberOutbox("m1"), s2.MemberOutbox("m2")
	put(t, m1, 1, 2, 3)
	if got := owner(t, s1, 2); got != "m1" {
		t.Fatalf("line kept by %q, want m1", got)
	}
	if got := claim(t, m2, true); len(got) != 0 {
		t.Errorf("m2 claimed %v of live m1's lines", got)
	}
	if got := claim(t, m2, false); len(got) != 0 {
		t.Errorf("m2 adopted %v of live m1's lines", got)
	}
	if got := claim(t, m1, false); len(got) != 0 {
		t.Errorf("m1's adoption took %v of its own lines", got)
	}
	if err := s1.Outbox().(digest.SharedOutbox).Claim(context.Background(), true, func(digest.Line) error { return nil }); !errors.Is(err, links.ErrInvalid) {
		t.Errorf("Claim on the outbox of no member = %v, want ErrInvalid", err)
	}
	if got := linesOf(t, s1); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("outbox holds %v", got)
	}
}

// testGoneMemberClaimedOnce: once m1's member key is gone, m2 and m3,
// claiming at once from several goroutines each, take every line of
// m1's, each once; lines of no member are claimed too.
func testGoneMemberClaimedOnce(t *testing.T, c *etcdtestClients) {
	keys := freshKeys()
	s1, s2, s3 := openStore(t, c.a, keys, Options{}), openStore(t, c.b, keys, Options{}), openStore(t, c.a, keys, Options{})
	gone1 := live(t, c.a, keys, "m1")
	live(t, c.b, keys, "m2")
	live(t, c.a, keys, "m3")
	const lines = 40
	var jobs []uint64
	for j := range uint64(lines) {
		jobs = append(jobs, j+1)
	}
	put(t, s1.MemberOutbox("m1"), jobs[:lines-2]...)
	put(t, s1.Outbox(), jobs[lines-2:]...) // no member's
	gone1()

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		taken = make(map[uint64][]string)
	)
	start := make(chan struct{})
	for _, m := range []struct {
		s  *Store
		id string
	}{{s2, "m2"}, {s3, "m3"}} {
		o := m.s.MemberOutbox(m.id)
		for range 3 {
			wg.Go(func() {
				<-start
				for _, j := range claim(t, o, false) {
					mu.Lock()
					taken[j] = append(taken[j], m.id)
					mu.Unlock()
				}
			})
		}
	}
	close(start)
	wg.Wait()
	for _, j := range jobs {
		if len(taken[j]) != 1 {
			t.Errorf("line %d taken by %v, want one member", j, taken[j])
			continue
		}
		if got := owner(t, s1, j); got != taken[j][0] {
			t.Errorf("line %d kept by %q, taken by %q", j, got, taken[j][0])
		}
	}
	if len(taken) != lines {
		t.Errorf("%d lines taken, want %d", len(taken), lines)
	}
	// Theirs now: neither takes the other's.
	if got := claim(t, s2.MemberOutbox("m2"), false); len(got) != 0 {
		t.Errorf("m2 took %v again", got)
	}
}

// testRestartResumesOwn: a member that runs again under its id takes
// its own lines, and those of members gone, but not a live one's.
func testRestartResumesOwn(t *testing.T, c *etcdtestClients) {
	keys := freshKeys()
	s1, s2 := openStore(t, c.a, keys, Options{}), openStore(t, c.b, keys, Options{})
	gone1 := live(t, c.a, keys, "m1")
	live(t, c.b, keys, "m2")
	put(t, s1.MemberOutbox("m1"), 1, 2)
	put(t, s2.MemberOutbox("m2"), 3)
	gone1()
	closeStore(t, s1)

	// m1 again, before any adoption.
	again := openStore(t, c.a, keys, Options{})
	live(t, c.a, keys, "m1")
	m1 := again.MemberOutbox("m1")
	if got := claim(t, m1, false); len(got) != 0 {
		t.Errorf("m1's adoption took %v", got)
	}
	if got := claim(t, m1, true); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("m1 resumed %v, want its lines 1 and 2", got)
	}
	if got := claim(t, s2.MemberOutbox("m2"), false); len(got) != 0 {
		t.Errorf("m2 adopted %v of live m1's lines", got)
	}
}

// testPutOverOthersLine: Put of a key another live member keeps returns
// its line with ErrElsewhere and leaves it; over a gone member's line
// it takes the line.
func testPutOverOthersLine(t *testing.T, c *etcdtestClients) {
	ctx := context.Background()
	keys := freshKeys()
	s1, s2 := openStore(t, c.a, keys, Options{}), openStore(t, c.b, keys, Options{})
	gone1 := live(t, c.a, keys, "m1")
	live(t, c.b, keys, "m2")
	m1, m2 := s1.MemberOutbox("m1"), s2.MemberOutbox("m2")
	put(t, m1, 1)
	again := outboxLine(1)
	again.Text = "❔ the pin may exist"
	if got, err := m1.Put(ctx, again); err != nil || got != outboxLine(1) {
		t.Errorf("m1 Put again = %+v, %v; want the first line", got, err)
	}
	got, err := m2.Put(ctx, again)
	if !errors.Is(err, digest.ErrElsewhere) || got != outboxLine(1) {
		t.Errorf("m2 Put over live m1's line = %+v, %v; want the first line and ErrElsewhere", got, err)
	}
	if o := owner(t, s1, 1); o != "m1" {
		t.Errorf("line kept by %q after m2's Put, want m1", o)
	}
	gone1()
	if got, err := m2.Put(ctx, again); err != nil || got != outboxLine(1) {
		t.Errorf("m2 Put over gone m1's line = %+v, %v; want the first line", got, err)
	}
	if o := owner(t, s1, 1); o != "m2" {
		t.Errorf("line kept by %q, want m2", o)
	}
}

// linesOf returns the jobs of the lines s's outbox holds.
func linesOf(t *testing.T, s *Store) []uint64 {
	t.Helper()
	var jobs []uint64
	if err := s.Outbox().Lines(context.Background(), func(l digest.Line) error {
		jobs = append(jobs, l.Key.Job)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return jobs
}

// sentAPI is a Discord API that records what is sent: every user's DM
// channel has the user's ID.
type sentAPI struct {
	mu    sync.Mutex
	lines map[string]int // line → times sent
}

func (a *sentAPI) OpenDM(_ context.Context, user snowflake.ID) (snowflake.ID, error) {
	return user, nil
}

func (a *sentAPI) Send(_ context.Context, _ snowflake.ID, m discord.MessageCreate) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range strings.Split(m.Content, "\n")[1:] {
		a.lines[l]++
	}
	return nil
}

// testSendersSendOnce: the Senders of m2 and m3, resuming at once after
// m1 died with lines kept, send each of m1's lines once between them,
// and leave the live m4's; the outbox then holds only m4's.
func testSendersSendOnce(t *testing.T, c *etcdtestClients) {
	keys := freshKeys()
	s1, s2, s3 := openStore(t, c.a, keys, Options{}), openStore(t, c.b, keys, Options{}), openStore(t, c.a, keys, Options{})
	gone1 := live(t, c.a, keys, "m1")
	live(t, c.b, keys, "m2")
	live(t, c.a, keys, "m3")
	live(t, c.a, keys, "m4")
	const lines = 20
	var jobs []uint64
	for j := range uint64(lines) {
		jobs = append(jobs, j+1)
	}
	put(t, s1.MemberOutbox("m1"), jobs...)
	put(t, s1.MemberOutbox("m4"), lines+1)
	gone1()

	api := &sentAPI{lines: make(map[string]int)}
	clock := scheduletest.NewClock(t0)
	var senders []*digest.Sender
	for _, m := range []struct {
		s  *Store
		id string
	}{{s2, "m2"}, {s3, "m3"}} {
		sd, err := digest.New(api, clock, zerolog.Nop(), digest.Config{}, digest.WithOutbox(m.s.MemberOutbox(m.id)))
		if err != nil {
			t.Fatal(err)
		}
		senders = append(senders, sd)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, sd := range senders {
		wg.Go(func() {
			<-start
			if _, err := sd.Resume(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resumed := int64(0)
	for _, sd := range senders {
		// Close sends what is gathered at once.
		if err := sd.Close(ctx); err != nil {
			t.Fatal(err)
		}
		resumed += sd.Stats().Resumed
	}
	if resumed != lines {
		t.Errorf("%d lines resumed, want %d", resumed, lines)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	for _, j := range jobs {
		if n := api.lines[outboxLine(j).Text]; n != 1 {
			t.Errorf("line %d sent %d times, want once", j, n)
		}
	}
	if n := api.lines[outboxLine(lines+1).Text]; n != 0 {
		t.Errorf("live m4's line sent %d times", n)
	}
	if got := linesOf(t, s1); !slices.Equal(got, []uint64{lines + 1}) {
		t.Errorf("outbox holds %v, want m4's line only", got)
	}
}
