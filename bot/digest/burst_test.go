package digest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/pinbot/pinbot/bot/internal/discordio"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/internal/limit/schedule"
)

// The burst tests finish 1,000 results at once and check, on the
// stand-in, which enforces Discord's per-channel limit (5 messages per
// 5 s) on its own clock, that no request met a 429, and that each
// channel's messages keep DiscordChannel()'s spacing.

// TestBurstManyUsersOneFallback: 100 users with DMs closed, 10 results
// each, all in one fallback channel.
func TestBurstManyUsersOneFallback(t *testing.T) {
	h := newHarness(t, Config{})
	const users, perUser = 100, 10
	ids := burstUsers(h, users, false)
	for _, id := range ids {
		for j := range perUser {
			h.add(id, h.general.ID, fmt.Sprintf("result %d for %d", j, id))
		}
	}
	h.runUntil(h.idle)

	check429s(t, h, 0)
	msgs := h.srv.Messages(h.general.ID)
	if len(msgs) != users {
		t.Fatalf("%d messages in the fallback channel, want %d", len(msgs), users)
	}
	lines := 0
	for _, m := range msgs {
		lines += strings.Count(m.Content, "\nresult ")
	}
	if lines != users*perUser {
		t.Errorf("%d results in the fallback channel, want %d", lines, users*perUser)
	}
	checkSpacing(t, "fallback channel", msgs, schedule.DiscordChannel())
	checkNoMentions(t, msgs)
	// The channel's limit, not the pace, sets the length: 100 messages at
	// 5 per 5 s take 95 s after the first.
	if last := msgs[len(msgs)-1].Timestamp.Sub(t0); last > DefaultGather+2*time.Minute {
		t.Errorf("last message at %v", last)
	}
	if st := h.s.Stats(); st.Fallbacks != users || st.DroppedMessages != 0 || st.RateLimited != 0 {
		t.Errorf("stats %+v", st)
	}

	// The same messages sent at once, without the scheduler, meet 429s.
	direct, err := h.srv.AddChannel(discordtest.Channel{GuildID: h.guild.ID, Name: "direct"})
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, m := range msgs {
		err := h.api.Send(context.Background(), direct.ID, discord.MessageCreate{Content: m.Content, AllowedMentions: &noMentions})
		if re, ok := discordio.AsError(err); ok && re.Status == http.StatusTooManyRequests {
			refused++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if refused != users-schedule.DiscordChannelMessages {
		t.Errorf("sent directly, %d of %d messages met a 429, want %d", refused, users, users-schedule.DiscordChannelMessages)
	}
}

// TestBurstOneUser: 1,000 results for one user, by DM.
func TestBurstOneUser(t *testing.T) {
	h := newHarness(t, Config{MaxLines: 1000})
	alice := burstUsers(h, 1, true)[0]
	var want []string
	for i := range 1000 {
		line := fmt.Sprintf("result %04d: pinned image.png to board Cats", i)
		want = append(want, line)
		h.add(alice, h.general.ID, line)
	}
	h.runUntil(h.idle)

	check429s(t, h, 0)
	dms := h.srv.DMs(alice)
	if len(dms) < 2*schedule.DiscordChannelMessages {
		t.Fatalf("%d messages, want the digest split in more than two windows' worth", len(dms))
	}
	if got := linesOf(contents(dms)); !slices.Equal(got, want) {
		t.Errorf("%d lines received, want the %d in order", len(got), len(want))
	}
	checkSpacing(t, "DM channel", dms, schedule.DiscordChannel())
	// As fast as the rule allows: 5 at once, every 5 s.
	start := dms[0].Timestamp
	for i, m := range dms {
		if want := start.Add(time.Duration(i/schedule.DiscordChannelMessages) * schedule.DiscordChannelWindow); !m.Timestamp.Equal(want) {
			t.Fatalf("message %d at %v, want %v", i, m.Timestamp.Sub(t0), want.Sub(t0))
		}
	}
	if n := len(h.srv.Messages(h.general.ID)); n != 0 {
		t.Errorf("%d messages in the fallback channel, want none", n)
	}
}

// TestBurstLooserRuleMeets429: a rule looser than Discord's (6 per 5 s)
// meets the stand-in's 429s, which is what the tests above would see of a
// scheduler that let too much through; the Sender waits out each
// retry_after and still delivers everything.
func TestBurstLooserRuleMeets429(t *testing.T) {
	h := newHarness(t, Config{Channel: schedule.Rule{Kind: schedule.KindSlidingLog, Calls: 6, Per: 5 * time.Second}})
	ids := burstUsers(h, 20, false)
	for _, id := range ids {
		h.add(id, h.general.ID, "pinned")
	}
	h.runUntil(h.idle)
	if n := count429s(h); n == 0 {
		t.Error("no 429 with a rule looser than the stand-in's")
	}
	if n := len(h.srv.Messages(h.general.ID)); n != len(ids) {
		t.Errorf("%d messages delivered, want %d", n, len(ids))
	}
	if st := h.s.Stats(); st.RateLimited == 0 || st.DroppedMessages != 0 {
		t.Errorf("stats %+v", st)
	}
}

// burstUsers adds n members, whose DMs are open or closed.
func burstUsers(h *harness, n int, dmsOpen bool) []snowflake.ID {
	ids := make([]snowflake.ID, n)
	for i := range ids {
		ids[i] = h.member(fmt.Sprintf("user%d", i))
		h.srv.SetDMsOpen(ids[i], dmsOpen)
	}
	return ids
}

func count429s(h *harness) int {
	n := 0
	for _, rq := range h.srv.Requests() {
		if rq.Status == http.StatusTooManyRequests {
			n++
		}
	}
	return n
}

func check429s(t *testing.T, h *harness, want int) {
	t.Helper()
	if n := count429s(h); n != want {
		t.Errorf("the stand-in answered %d requests with 429, want %d", n, want)
	}
}

// checkSpacing checks that a channel's messages, in order of arrival,
// never number more than rule.Calls in any span of rule.Per.
func checkSpacing(t *testing.T, name string, msgs []discordtest.Message, rule schedule.Rule) {
	t.Helper()
	for i := rule.Calls; i < len(msgs); i++ {
		if gap := msgs[i].Timestamp.Sub(msgs[i-rule.Calls].Timestamp); gap < rule.Per {
			t.Fatalf("%s: messages %d and %d only %v apart, want at least %v", name, i-rule.Calls, i, gap, rule.Per)
		}
	}
}
