package digest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// twoServers adds a second guild and makes user a member of both; it
// returns a private channel of the harness's guild that only user may
// view, and a public channel of the second guild.
func twoServers(h *harness, user snowflake.ID) (private, public discordtest.Channel) {
	h.t.Helper()
	other, err := h.srv.AddGuild(discordtest.Guild{Name: "other"})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.srv.AddMember(discordtest.Member{GuildID: other.ID, UserID: user}); err != nil {
		h.t.Fatal(err)
	}
	private = h.channel(discordtest.Channel{GuildID: h.guild.ID, Name: "private", Overwrites: []discordtest.Overwrite{
		discordtest.RoleOverwrite(h.guild.ID, 0, discord.PermissionViewChannel),
		discordtest.MemberOverwrite(user, discord.PermissionViewChannel, 0),
		discordtest.MemberOverwrite(h.srv.BotUserID(), discord.PermissionViewChannel, 0),
	}})
	public = h.channel(discordtest.Channel{GuildID: other.ID, Name: "public"})
	return private, public
}

// TestFallbackOwnChannels: with DMs closed, each line goes to the channel
// where its command ran, in its own server; none is posted in the
// channel of another line, even one of the same digest.
func TestFallbackOwnChannels(t *testing.T) {
	h := newHarness(t, Config{})
	bob := h.member("bob")
	h.srv.SetDMsOpen(bob, false)
	private, public := twoServers(h, bob)

	h.add(bob, private.ID, "✅ private cat")
	h.add(bob, public.ID, "✅ public dog")
	h.add(bob, private.ID, "❌ private bird")
	h.runUntil(h.idle)

	want := map[snowflake.ID][]string{
		private.ID:   {fallbackPrefix(bob) + "Queued pins that ran:\n✅ private cat\n❌ private bird"},
		public.ID:    {fallbackPrefix(bob) + "Queued pins that ran:\n✅ public dog"},
		h.general.ID: nil,
	}
	for ch, w := range want {
		msgs := h.srv.Messages(ch)
		if got := contents(msgs); !slices.Equal(got, w) {
			t.Errorf("channel %d holds %q, want %q", ch, got, w)
		}
		checkNoMentions(t, msgs)
	}
	if st := h.s.Stats(); st.Digests != 1 || st.Messages != 2 || st.Fallbacks != 2 || st.Withheld != 0 {
		t.Errorf("stats %+v", st)
	}
	if got := h.outbox.stored(); len(got) != 0 {
		t.Errorf("outbox holds %q after delivery, want nothing", got)
	}
}

// TestFallbackChecksEachChannel: a user who can no longer read one of
// the channels gets the lines of the others there, and those of that one
// nowhere.
func TestFallbackChecksEachChannel(t *testing.T) {
	h := newHarness(t, Config{})
	bob := h.member("bob")
	h.srv.SetDMsOpen(bob, false)
	private, public := twoServers(h, bob)
	h.add(bob, private.ID, "✅ private cat")
	h.add(bob, public.ID, "✅ public dog")
	// Bob loses the private channel before the digest goes; Pinbot keeps
	// it.
	private.Overwrites = slices.Delete(private.Overwrites, 1, 2)
	h.channel(private)
	h.runUntil(h.idle)

	if got := contents(h.srv.Messages(private.ID)); len(got) != 0 {
		t.Errorf("the channel bob can no longer read holds %q", got)
	}
	if got := contents(h.srv.Messages(public.ID)); !slices.Equal(got, []string{fallbackPrefix(bob) + "Queued pins that ran:\n✅ public dog"}) {
		t.Errorf("the other channel holds %q", got)
	}
	if st := h.s.Stats(); st.Withheld != 1 || st.Fallbacks != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestDMRefusedMidDigest: when the DM channel refuses the second message
// of a digest, the lines it did not carry go to their own channels; the
// first message's are not sent again.
func TestDMRefusedMidDigest(t *testing.T) {
	h := newHarness(t, Config{})
	alice := h.member("alice")
	private, public := twoServers(h, alice)
	var all []string
	for i := range 30 {
		ch, where := private.ID, "private"
		if i%3 == 0 {
			ch, where = public.ID, "public"
		}
		line := strings.Repeat("x", 90) + " " + where + " " + string(rune('A'+i))
		all = append(all, line)
		h.add(alice, ch, line)
	}
	// The first message goes; the DM channel then answers Unknown Channel.
	if err := h.srv.Inject(discordtest.RouteCreateMessage, 1, discordtest.Fault{}); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Inject(discordtest.RouteCreateMessage, 1, discordtest.Fault{Status: 404, Code: 10003}); err != nil {
		t.Fatal(err)
	}
	h.runUntil(h.idle)

	dms := contents(h.srv.DMs(alice))
	if len(dms) != 1 {
		t.Fatalf("DMs %q, want the first message only", dms)
	}
	got := linesOf(dms)
	for _, ch := range []discordtest.Channel{private, public} {
		for _, m := range contents(h.srv.Messages(ch.ID)) {
			text, ok := strings.CutPrefix(m, fallbackPrefix(alice))
			if !ok {
				t.Fatalf("channel message %q does not name alice", m)
			}
			for _, l := range linesOf([]string{text}) {
				if !strings.Contains(l, " "+ch.Name+" ") {
					t.Errorf("line %q in channel %s", l, ch.Name)
				}
				got = append(got, l)
			}
		}
	}
	slices.Sort(got)
	slices.Sort(all)
	if !slices.Equal(got, all) {
		t.Errorf("lines received %d, want each of the %d once", len(got), len(all))
	}
	if got := h.outbox.stored(); len(got) != 0 {
		t.Errorf("outbox holds %d lines after delivery, want none", len(got))
	}
}

// TestFallbackCheckRetried: a check that fails is tried again after the
// backoff, and the digest then goes.
func TestFallbackCheckRetried(t *testing.T) {
	h := newHarness(t, Config{})
	bob := h.member("bob")
	h.srv.SetDMsOpen(bob, false)
	h.checkFails = 2
	h.add(bob, h.general.ID, "pinned")
	h.runUntil(h.idle)
	msgs := h.srv.Messages(h.general.ID)
	if len(msgs) != 1 {
		t.Fatalf("%d messages in the channel, want 1", len(msgs))
	}
	// 2 s, then 4 s of backoff after the DM's refusal at the gathering delay.
	if want := t0.Add(DefaultGather + 6*time.Second); !msgs[0].Timestamp.Equal(want) {
		t.Errorf("posted at %v, want %v", msgs[0].Timestamp.Sub(t0), want.Sub(t0))
	}
	if st := h.s.Stats(); st.Retries != 2 || st.Fallbacks != 1 {
		t.Errorf("stats %+v", st)
	}
}
