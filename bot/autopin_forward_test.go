package bot

import (
	"testing"

	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/links"
)

// TestAutopinForwarded: in a cluster, the pictures of an auto-pin channel
// are queued on the member that owns the rule's account, through the
// path a forwarded /pin takes: one forward, the jobs in the owner's
// engine as the rule's owner, with the rule's board.
func TestAutopinForwarded(t *testing.T) {
	w, peers := forwardWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	if err := w.links.UpdateAutopinRules(w.ctx, w.guild.String(), func([]links.AutopinRule) ([]links.AutopinRule, error) {
		return []links.AutopinRule{{Channel: w.channel.String(), Owner: alice.String(), Account: "1001", Board: "b1001", BoardName: "Board of alicepins"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 4)
	w.bot.autopin.onDone = func(_ discordio.Message, result string) { done <- result }
	m := w.images(2, "Two cats")
	w.bot.HandleMessage(discordio.Message{GuildID: w.guild, ChannelID: w.channel, MessageID: m.ID, AuthorID: w.user("poster")})
	select {
	case r := <-done:
		if r != autopinQueued {
			t.Fatalf("result %q, want %q", r, autopinQueued)
		}
	case <-w.ctx.Done():
		t.Fatal("the message was not worked on")
	}
	if n := peers.count(); n != 1 {
		t.Fatalf("%d forwards, want 1", n)
	}
	js, _, err := w.engine.Jobs(w.ctx, "1001")
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 2 {
		t.Fatalf("%d jobs, want 2", len(js))
	}
	for i, j := range js {
		q, err := decodeQueuedPin(j.Payload)
		if err != nil || q.User != alice || q.Board != "b1001" || q.Message != m.ID || q.Image != i+1 {
			t.Errorf("job %d: %+v, %v", i, q, err)
		}
	}
	if n := len(w.ps.PinsFor("1001")); n != 0 {
		t.Fatalf("%d pinned at once, want none", n)
	}
}
