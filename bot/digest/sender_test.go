package digest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/internal/limit/schedule"
)

// TestGatherIntoOneDigest: lines arriving within the gathering delay of
// the first go out together, by DM, when it has passed; a later line
// starts the next digest.
func TestGatherIntoOneDigest(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")

	if !h.add(alice, h.general.ID, "one") {
		t.Fatal("Add refused a line")
	}
	h.clock.Set(t0.Add(10 * time.Second))
	h.settle()
	h.add(alice, h.general.ID, "two <@&1> @everyone <@1>")
	h.clock.Set(t0.Add(time.Minute - time.Nanosecond))
	h.settle()
	if n := len(h.requests(discordtest.RouteCreateMessage, "")); n != 0 {
		t.Fatalf("%d messages sent before the gathering delay passed", n)
	}
	h.add(alice, 0, "three")
	h.clock.Set(t0.Add(time.Minute))
	h.runUntil(h.idle)

	dms := h.srv.DMs(alice)
	want := []string{"Queued pins that ran:\none\ntwo <@&1> @everyone <@1>\nthree"}
	if got := contents(dms); !slices.Equal(got, want) {
		t.Fatalf("DMs = %q want %q", got, want)
	}
	if !dms[0].Timestamp.Equal(t0.Add(time.Minute)) {
		t.Errorf("digest sent at %v, want when the gathering delay passed", dms[0].Timestamp.Sub(t0))
	}
	checkNoMentions(t, dms)

	// The next line starts the next digest, a gathering delay later.
	h.clock.Set(t0.Add(90 * time.Second))
	h.add(alice, 0, "four")
	h.runUntil(h.idle)
	dms = h.srv.DMs(alice)
	if len(dms) != 2 || dms[1].Content != "Queued pins that ran:\nfour" || !dms[1].Timestamp.Equal(t0.Add(150*time.Second)) {
		t.Errorf("second digest: %q at %v", contents(dms), dms[len(dms)-1].Timestamp.Sub(t0))
	}
	if n := len(h.requests(discordtest.RouteCreateDM, "")); n != 1 {
		t.Errorf("%d DM channels opened, want 1 (remembered)", n)
	}
	if st := h.s.Stats(); st.Lines != 4 || st.Digests != 2 || st.Messages != 2 || st.Users != 0 || st.Queued != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestDigestSplitsAt2000: a long digest goes out as several messages of
// at most 2000 characters, lines whole and in order; an overlong line is
// cut.
func TestDigestSplitsAt2000(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	var want []string
	for i := range 60 {
		line := fmt.Sprintf("%02d %s", i, strings.Repeat("é", 97))
		want = append(want, line)
		h.add(alice, 0, line)
	}
	h.add(alice, 0, strings.Repeat("x", 1000))
	want = append(want, strings.Repeat("x", DefaultMaxLineRunes-1)+"…")
	h.runUntil(h.idle)

	msgs := contents(h.srv.DMs(alice))
	if len(msgs) < 4 {
		t.Fatalf("%d messages, want the digest split", len(msgs))
	}
	for i, m := range msgs {
		if n := utf8.RuneCountInString(m); n > maxContent {
			t.Errorf("message %d has %d characters", i, n)
		}
	}
	if !strings.HasPrefix(msgs[0], DefaultHeader+"\n") {
		t.Errorf("first message %q does not open with the header", msgs[0][:40])
	}
	if got := linesOf(msgs); !slices.Equal(got, want) {
		t.Errorf("lines out of order, cut or lost: got %d lines want %d", len(got), len(want))
	}
}

// TestDMsClosedGoToFallback: 403 50007 on the DM sends the digest to the
// fallback channel, naming the user without pinging; the next digest goes
// there at once, until DMsClosedFor has passed.
func TestDMsClosedGoToFallback(t *testing.T) {
	h := newHarness(t, Config{})
	bob := h.member("bob")
	h.srv.SetDMsOpen(bob, false)
	h.add(bob, h.general.ID, "pinned cat.png <@999>")
	h.runUntil(h.idle)

	dm, ok := h.srv.DMChannel(bob)
	if !ok {
		t.Fatal("no DM channel opened")
	}
	tried := h.requests(discordtest.RouteCreateMessage, messagesPath(dm))
	if len(tried) != 1 || tried[0].Status != http.StatusForbidden || tried[0].Code != 50007 {
		t.Fatalf("DM tries %+v, want one 403 50007", tried)
	}
	msgs := h.srv.Messages(h.general.ID)
	want := fallbackPrefix(bob) + "Queued pins that ran:\npinned cat.png <@999>"
	if len(msgs) != 1 || msgs[0].Content != want {
		t.Fatalf("fallback channel holds %q want %q", contents(msgs), want)
	}
	checkNoMentions(t, msgs)
	if st := h.s.Stats(); st.Messages != 1 || st.Fallbacks != 1 || st.DroppedMessages != 0 {
		t.Errorf("stats %+v", st)
	}

	// Within DMsClosedFor, no DM is tried.
	h.add(bob, h.general.ID, "again")
	h.runUntil(h.idle)
	if n := len(h.requests(discordtest.RouteCreateMessage, messagesPath(dm))); n != 1 {
		t.Errorf("%d DM tries, want still 1", n)
	}
	if n := len(h.srv.Messages(h.general.ID)); n != 2 {
		t.Errorf("%d fallback messages, want 2", n)
	}

	// Then DMs are tried again, and bob opened them.
	h.srv.SetDMsOpen(bob, true)
	h.clock.Set(h.clock.Now().Add(DefaultDMsClosedFor))
	h.add(bob, h.general.ID, "open")
	h.runUntil(h.idle)
	if got := contents(h.srv.DMs(bob)); !slices.Equal(got, []string{"Queued pins that ran:\nopen"}) {
		t.Errorf("after DMsClosedFor: DMs %q", got)
	}
}

// TestFallbackRefusedDrops: when the fallback channel refuses too, the
// digest is dropped with a log line.
func TestFallbackRefusedDrops(t *testing.T) {
	cases := []struct {
		name    string
		channel func(h *harness) snowflake.ID
		code    int
		reason  string
	}{
		{"no send permission", func(h *harness) snowflake.ID {
			return h.channel(discordtest.Channel{GuildID: h.guild.ID, Overwrites: []discordtest.Overwrite{
				discordtest.MemberOverwrite(h.srv.BotUserID(), 0, discord.PermissionSendMessages),
			}}).ID
		}, 50013, "the fallback channel refused it"},
		{"cannot view", func(h *harness) snowflake.ID {
			return h.channel(discordtest.Channel{GuildID: h.guild.ID, Overwrites: []discordtest.Overwrite{
				discordtest.MemberOverwrite(h.srv.BotUserID(), 0, discord.PermissionViewChannel),
			}}).ID
		}, 50001, "the fallback channel refused it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			bob := h.member("bob")
			h.srv.SetDMsOpen(bob, false)
			fallback := c.channel(h)
			h.add(bob, fallback, "pinned")
			h.runUntil(h.idle)
			rs := h.requests(discordtest.RouteCreateMessage, messagesPath(fallback))
			if len(rs) != 1 || rs[0].Code != c.code {
				t.Errorf("fallback requests %+v, want one refused with %d", rs, c.code)
			}
			if st := h.s.Stats(); st.Messages != 0 || st.DroppedMessages != 1 || st.Users != 0 {
				t.Errorf("stats %+v", st)
			}
			logs := h.logs.String()
			if !strings.Contains(logs, "digest dropped") || !strings.Contains(logs, c.reason) || !strings.Contains(logs, bob.String()) {
				t.Errorf("log does not say the digest for %d was dropped because %s:\n%s", bob, c.reason, logs)
			}
			// Discord refused it for good: the Outbox forgets it.
			if got := h.outbox.stored(); len(got) != 0 {
				t.Errorf("outbox holds %q, want nothing", got)
			}
		})
	}
}

// TestFallbackWithheld: with the user's DMs closed, a line is not posted
// in the channel where its command ran when the user may not read it (or
// it is unknown, or there is none): it is logged and stays in /queue, and
// nothing is sent there.
func TestFallbackWithheld(t *testing.T) {
	cases := []struct {
		name    string
		channel func(h *harness, bob snowflake.ID) snowflake.ID
		reason  string
	}{
		{"user cannot view", func(h *harness, bob snowflake.ID) snowflake.ID {
			return h.channel(discordtest.Channel{GuildID: h.guild.ID, Overwrites: []discordtest.Overwrite{
				discordtest.MemberOverwrite(bob, 0, discord.PermissionViewChannel),
			}}).ID
		}, "the user may not read that channel"},
		{"user cannot read history", func(h *harness, bob snowflake.ID) snowflake.ID {
			return h.channel(discordtest.Channel{GuildID: h.guild.ID, Overwrites: []discordtest.Overwrite{
				discordtest.MemberOverwrite(bob, 0, discord.PermissionReadMessageHistory),
			}}).ID
		}, "the user may not read that channel"},
		{"user left the server", func(h *harness, bob snowflake.ID) snowflake.ID {
			if err := h.srv.RemoveMember(h.guild.ID, bob); err != nil {
				h.t.Fatal(err)
			}
			return h.general.ID
		}, "the user may not read that channel"},
		{"unknown channel", func(*harness, snowflake.ID) snowflake.ID { return 12345 }, "the user may not read that channel"},
		{"no channel", func(*harness, snowflake.ID) snowflake.ID { return 0 }, "the command's channel is not known"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			bob := h.member("bob")
			h.srv.SetDMsOpen(bob, false)
			fallback := c.channel(h, bob)
			h.add(bob, fallback, "pinned")
			h.runUntil(h.idle)
			if fallback != 0 {
				if rs := h.requests(discordtest.RouteCreateMessage, messagesPath(fallback)); len(rs) != 0 {
					t.Errorf("requests to the channel %+v, want none", rs)
				}
			}
			if st := h.s.Stats(); st.Messages != 0 || st.Withheld != 1 || st.DroppedMessages != 0 || st.Users != 0 {
				t.Errorf("stats %+v", st)
			}
			logs := h.logs.String()
			if !strings.Contains(logs, "digest not posted in the channel where the commands ran") || !strings.Contains(logs, c.reason) || !strings.Contains(logs, bob.String()) {
				t.Errorf("log does not say the digest for %d was not posted because %s:\n%s", bob, c.reason, logs)
			}
			if got := h.outbox.stored(); len(got) != 0 {
				t.Errorf("outbox holds %q, want nothing (the next run would find the same)", got)
			}
		})
	}
}

// TestRetry5xx: a 5xx is tried again after the backoff, doubling; after
// Attempts tries the digest is dropped with a log line.
func TestRetry5xx(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	if err := h.srv.Inject(discordtest.RouteCreateDM, 1, discordtest.Fault{Status: 503}); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Inject(discordtest.RouteCreateMessage, 2, discordtest.Fault{Status: 502}); err != nil {
		t.Fatal(err)
	}
	h.add(alice, 0, "pinned")
	h.runUntil(h.idle)

	gather := t0.Add(DefaultGather)
	checkTimes(t, h.requests(discordtest.RouteCreateDM, ""), gather, gather.Add(2*time.Second))
	open := gather.Add(2 * time.Second)
	checkTimes(t, h.requests(discordtest.RouteCreateMessage, ""), open, open.Add(2*time.Second), open.Add(6*time.Second))
	if n := len(h.srv.DMs(alice)); n != 1 {
		t.Errorf("%d DMs, want 1", n)
	}
	if st := h.s.Stats(); st.Retries != 3 || st.Messages != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestRetryGivesUp(t *testing.T) {
	h := newHarness(t, Config{Attempts: 3})
	alice := h.member("alice")
	if err := h.srv.Inject(discordtest.RouteCreateMessage, 10, discordtest.Fault{Status: 500}); err != nil {
		t.Fatal(err)
	}
	h.add(alice, 0, "pinned")
	h.runUntil(h.idle)
	gather := t0.Add(DefaultGather)
	checkTimes(t, h.requests(discordtest.RouteCreateMessage, ""), gather, gather.Add(2*time.Second), gather.Add(6*time.Second))
	if st := h.s.Stats(); st.Retries != 2 || st.DroppedMessages != 1 || st.Users != 0 {
		t.Errorf("stats %+v", st)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "every try failed") {
		t.Errorf("no log line for the dropped digest:\n%s", logs)
	}
}

// TestRetryTimeout: a request that outlasts SendTimeout is abandoned and
// tried again after the backoff.
func TestRetryTimeout(t *testing.T) {
	h := newHarness(t, Config{SendTimeout: 100 * time.Millisecond})
	alice := h.member("alice")
	hold := make(chan struct{})
	defer close(hold)
	if err := h.srv.Inject(discordtest.RouteCreateMessage, 1, discordtest.Fault{Hold: hold}); err != nil {
		t.Fatal(err)
	}
	h.add(alice, 0, "pinned")
	h.runUntil(h.idle)
	gather := t0.Add(DefaultGather)
	checkTimes(t, h.requests(discordtest.RouteCreateMessage, ""), gather, gather.Add(2*time.Second))
	if n := len(h.srv.DMs(alice)); n != 1 {
		t.Errorf("%d DMs, want 1", n)
	}
}

// Test429RetryAfter: a 429, per route or global, is tried again after
// its retry_after, not earlier.
func Test429RetryAfter(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	if err := h.srv.Inject(discordtest.RouteCreateDM, 1, discordtest.Fault{Status: 429, RetryAfter: 1500 * time.Millisecond, Global: true}); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Inject(discordtest.RouteCreateMessage, 1, discordtest.Fault{Status: 429, RetryAfter: 3250 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	h.add(alice, 0, "pinned")
	h.runUntil(h.idle)
	gather := t0.Add(DefaultGather)
	open := gather.Add(1500 * time.Millisecond)
	checkTimes(t, h.requests(discordtest.RouteCreateDM, ""), gather, open)
	checkTimes(t, h.requests(discordtest.RouteCreateMessage, ""), open, open.Add(3250*time.Millisecond))
	if st := h.s.Stats(); st.RateLimited != 2 || st.Messages != 1 {
		t.Errorf("stats %+v", st)
	}
}

// checkTimes checks the requests arrived at the instants want.
func checkTimes(t *testing.T, rs []discordtest.Request, want ...time.Time) {
	t.Helper()
	var got []time.Duration
	for _, rq := range rs {
		got = append(got, rq.At.Sub(t0))
	}
	var w []time.Duration
	for _, at := range want {
		w = append(w, at.Sub(t0))
	}
	if !slices.Equal(got, w) {
		t.Errorf("requests at %v, want %v", got, w)
	}
}

// TestBoundedMemory: lines over MaxLines are counted in the digest, lines
// for users over MaxUsers dropped and logged, DM channels remembered for
// at most DMCache users; a user is forgotten once their digest is sent.
func TestBoundedMemory(t *testing.T) {
	h := newHarness(t, Config{MaxUsers: 3, MaxLines: 5, DMCache: 2})
	users := []snowflake.ID{h.member("a"), h.member("b"), h.member("c"), h.member("d")}
	for i := range 8 {
		kept := h.add(users[0], 0, fmt.Sprintf("line %d", i))
		if kept != (i < 5) {
			t.Errorf("line %d kept %v", i, kept)
		}
	}
	h.add(users[1], 0, "b")
	h.add(users[2], 0, "c")
	if h.add(users[3], 0, "d") {
		t.Error("a fourth user's line was kept with MaxUsers 3")
	}
	if st := h.s.Stats(); st.Users != 3 || st.Lines != 7 || st.DroppedLines != 4 {
		t.Errorf("stats %+v", st)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "too many users waiting for a digest") {
		t.Errorf("no log line for the dropped user:\n%s", logs)
	}
	h.runUntil(h.idle)

	want := "Queued pins that ran:\nline 0\nline 1\nline 2\nline 3\nline 4\n… and 3 more"
	if got := contents(h.srv.DMs(users[0])); !slices.Equal(got, []string{want}) {
		t.Errorf("digest %q want %q", got, want)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "result lines dropped while too many users waited") {
		t.Errorf("no log line counting the dropped lines:\n%s", logs)
	}
	h.s.mu.Lock()
	cached := h.s.dmChans.len()
	h.s.mu.Unlock()
	if cached != 2 {
		t.Errorf("%d DM channels remembered, want DMCache 2", cached)
	}
	if !h.add(users[3], 0, "d") {
		t.Error("a user's line refused once the others' digests were sent")
	}
}

// TestCloseFlushes: Close sends what is gathered at once, waits for it,
// and refuses lines from then on.
func TestCloseFlushes(t *testing.T) {
	h := newHarness(t, Config{})
	users := []snowflake.ID{h.member("a"), h.member("b"), h.member("c")}
	for _, u := range users {
		h.add(u, 0, "pinned for "+u.String())
	}
	h.clock.Set(t0.Add(time.Second))
	closed := make(chan error, 1)
	go func() { closed <- h.s.Close(context.Background()) }()
	// Close's flush starts under the lock that sets closing.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.s.waitFor(ctx, func() bool { return h.s.closing }); err != nil {
		t.Fatal(err)
	}
	h.runUntil(h.idle)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, u := range users {
		dms := h.srv.DMs(u)
		if len(dms) != 1 || dms[0].Content != "Queued pins that ran:\npinned for "+u.String() || !dms[0].Timestamp.Equal(t0.Add(time.Second)) {
			t.Errorf("user %d: DMs %q, want the digest at Close (1 s)", u, contents(dms))
		}
	}
	if h.add(users[0], 0, "late") {
		t.Error("Add kept a line after Close")
	}
	if st := h.s.Stats(); st.DroppedLines != 1 || st.Messages != 3 {
		t.Errorf("stats %+v", st)
	}
}

// TestCloseGivesUp: Close whose context ends first reports what it could
// not send.
func TestCloseGivesUp(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	hold := make(chan struct{})
	defer close(hold)
	if err := h.srv.Inject(discordtest.RouteCreateMessage, 1, discordtest.Fault{Hold: hold}); err != nil {
		t.Fatal(err)
	}
	h.add(alice, 0, "one")
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan error, 1)
	go func() { closed <- h.s.Close(ctx) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if _, err := h.srv.WaitRequests(wctx, discordtest.RouteCreateMessage, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := <-closed
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "1 messages") {
		t.Errorf("Close = %v, want the unsent message and context.Canceled", err)
	}
	if st := h.s.Stats(); st.DroppedMessages != 1 || st.Users != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestCloseStopsAlarms: Close leaves no gathering delay or retry filed
// with the runner, and nothing goes out after it.
func TestCloseStopsAlarms(t *testing.T) {
	h := newHarness(t, Config{})
	alice, bob := h.member("alice"), h.member("bob")
	if err := h.srv.Inject(discordtest.RouteCreateDM, 1, discordtest.Fault{Status: 503}); err != nil {
		t.Fatal(err)
	}
	h.add(alice, 0, "for alice")
	h.runUntil(func() bool { return len(h.requests(discordtest.RouteCreateDM, "")) == 1 })
	h.settle() // alice's retry is filed
	h.add(bob, 0, "for bob")
	h.s.mu.Lock()
	if n := len(h.s.alarms); n != 2 {
		t.Errorf("%d alarms before Close, want alice's retry and bob's gathering delay", n)
	}
	h.s.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.s.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want context.Canceled", err)
	}
	h.s.mu.Lock()
	left := len(h.s.alarms)
	h.s.mu.Unlock()
	if n := h.s.runner.Alarms(); left != 0 || n != 0 {
		t.Errorf("after Close: %d alarms kept, %d filed with the runner; want none", left, n)
	}
	// Close flushes what is pending at once, so a request may have gone
	// out during it, cut short by its context; once it returned, nothing
	// may: no alarm fires.
	sent := len(h.srv.Requests())
	h.clock.Set(t0.Add(time.Hour))
	if n := len(h.srv.Requests()); n != sent {
		t.Errorf("%d requests after Close returned, want none", n-sent)
	}
}

// TestConcurrentAddClose adds lines for many users from several
// goroutines while the clock moves and Close runs: every line is sent
// once or counted as dropped. Run under -race.
func TestConcurrentAddClose(t *testing.T) {
	const adders, usersEach, linesEach = 4, 3, 20
	h := newHarness(t, Config{})
	var users [adders][]snowflake.ID
	for a := range adders {
		for u := range usersEach {
			users[a] = append(users[a], h.member(fmt.Sprintf("u%d-%d", a, u)))
		}
	}
	half := make(chan struct{}, adders)
	done := make(chan struct{})
	var added sync.WaitGroup
	for a := range adders {
		added.Add(1)
		go func() {
			defer added.Done()
			for i := range linesEach {
				if i == linesEach/2 {
					half <- struct{}{}
					if a%2 == 0 {
						// The rest after Close began; the other adders race it.
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						if err := h.s.waitFor(ctx, func() bool { return h.s.closing }); err != nil {
							t.Error(err)
						}
						cancel()
					}
				}
				for _, u := range users[a] {
					h.add(u, 0, fmt.Sprintf("line %d for %d", i, u))
				}
			}
		}()
	}
	go func() {
		defer close(done)
		for range 2 * linesEach {
			h.clock.Advance(5 * time.Second)
		}
	}()
	for range adders {
		<-half
	}
	closed := make(chan error, 1)
	go func() { closed <- h.s.Close(context.Background()) }()
	added.Wait()
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.s.waitFor(ctx, func() bool { return h.s.closing }); err != nil {
		t.Fatal(err)
	}
	h.runUntil(h.idle)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}

	sent := map[string]int{}
	for a := range adders {
		for _, u := range users[a] {
			for _, m := range h.srv.DMs(u) {
				for _, l := range linesOf([]string{m.Content}) {
					sent[l]++
				}
			}
		}
	}
	st := h.s.Stats()
	for l, n := range sent {
		if n != 1 {
			t.Errorf("%q sent %d times", l, n)
		}
	}
	if late := int64(adders / 2 * usersEach * linesEach / 2); st.DroppedLines < late {
		t.Errorf("%d lines dropped, want at least the %d added after Close began", st.DroppedLines, late)
	}
	if total := int64(adders * usersEach * linesEach); int64(len(sent)) != st.Lines || st.Lines+st.DroppedLines != total {
		t.Errorf("%d lines sent; stats %+v; want every one of %d lines sent or dropped", len(sent), st, total)
	}
	if n := h.s.runner.Alarms(); n != 0 {
		t.Errorf("%d alarms filed after Close, want none", n)
	}
}

func TestConfigValidate(t *testing.T) {
	steps := []struct {
		cfg  Config
		want string // in the error; "" for none
	}{
		{Config{}, ""},
		{DefaultConfig(), ""},
		{Config{MaxLines: -1}, "Config.MaxLines"},
		{Config{Gather: -time.Second}, "Config.Gather"},
		{Config{MaxLineRunes: 1800}, "Config.MaxLineRunes"},
		{Config{Header: strings.Repeat("h", 201)}, "Config.Header"},
		{Config{Pace: schedule.Rule{Kind: schedule.KindSlidingLog}}, "Config.Pace"},
	}
	for i, st := range steps {
		err := st.cfg.Validate()
		if (err == nil) != (st.want == "") || (err != nil && !strings.Contains(err.Error(), st.want)) {
			t.Errorf("step %d: Validate() = %v, want %q", i, err, st.want)
		}
	}
}

// TestInvalidMessageDropped: a message Discord refuses as such (400) is
// dropped with a log line; the digest's other messages still go.
func TestInvalidMessageDropped(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	if err := h.srv.Inject(discordtest.RouteCreateMessage, 1, discordtest.Fault{Status: 400, Code: 50035}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		h.add(alice, 0, fmt.Sprintf("%02d %s", i, strings.Repeat("x", 100)))
	}
	h.runUntil(h.idle)
	dms := contents(h.srv.DMs(alice))
	if len(dms) != 1 || strings.HasPrefix(dms[0], DefaultHeader) {
		t.Errorf("DMs %q, want the second message only", dms)
	}
	if st := h.s.Stats(); st.DroppedMessages != 1 || st.Messages != 1 || st.Retries != 0 {
		t.Errorf("stats %+v", st)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "Discord refused a digest message") {
		t.Errorf("no log line for the refused message:\n%s", logs)
	}
}

// TestDMChannelRefusedFallsBack: a DM channel that answers 404 (Unknown
// Channel) sends this digest to the fallback channel and is opened again
// for the next one; the user's DMs are not taken for closed.
func TestDMChannelRefusedFallsBack(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	if err := h.srv.Inject(discordtest.RouteCreateMessage, 1, discordtest.Fault{Status: 404, Code: 10003}); err != nil {
		t.Fatal(err)
	}
	h.add(alice, h.general.ID, "one")
	h.runUntil(h.idle)
	if n := len(h.srv.Messages(h.general.ID)); n != 1 {
		t.Fatalf("%d fallback messages, want 1", n)
	}
	h.add(alice, h.general.ID, "two")
	h.runUntil(h.idle)
	if got := contents(h.srv.DMs(alice)); !slices.Equal(got, []string{"Queued pins that ran:\ntwo"}) {
		t.Errorf("DMs %q", got)
	}
	if n := len(h.requests(discordtest.RouteCreateDM, "")); n != 2 {
		t.Errorf("%d DM channels opened, want 2 (the refused one forgotten)", n)
	}
}

// TestBotRESTClient: the bot's own REST client (its HTTP client and rate
// limiter, bot/internal/discordio) opens DMs, meets closed ones and falls
// back as the harness's does.
func TestBotRESTClient(t *testing.T) {
	h := newHarness(t, Config{}, discordio.RESTClientOpts(zerolog.Nop())...)
	alice, bob := h.member("alice"), h.member("bob")
	h.srv.SetDMsOpen(bob, false)
	h.add(alice, h.general.ID, "for alice")
	h.add(bob, h.general.ID, "for bob")
	h.runUntil(h.idle)
	if got := contents(h.srv.DMs(alice)); !slices.Equal(got, []string{"Queued pins that ran:\nfor alice"}) {
		t.Errorf("alice's DMs %q", got)
	}
	if got := contents(h.srv.Messages(h.general.ID)); !slices.Equal(got, []string{fallbackPrefix(bob) + "Queued pins that ran:\nfor bob"}) {
		t.Errorf("fallback channel %q", got)
	}
}
