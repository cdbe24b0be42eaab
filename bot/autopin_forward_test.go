package bot

import (
	"slices"
	"testing"

	"github.com/disgoorg/disgo/discord"

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

	// An edit adds a picture: the owner queues it alone (the pictures
	// left out travel with the batch); the same edit again queues nothing.
	w.dc.DeleteMessage(m.ID)
	edited := m
	edited.Attachments = append(slices.Clone(m.Attachments), discord.Attachment{Filename: "more.png", ContentType: new("image/png")})
	edited = w.dc.AddMessage(w.channel, edited)
	for _, want := range []string{autopinQueued, autopinUnchanged} {
		w.bot.HandleMessage(discordio.Message{Kind: discordio.MessageUpdated, GuildID: w.guild, ChannelID: w.channel, MessageID: m.ID})
		select {
		case r := <-done:
			if r != want {
				t.Fatalf("edit: result %q, want %q", r, want)
			}
		case <-w.ctx.Done():
			t.Fatal("the edit was not worked on")
		}
	}
	if js, _, err = w.engine.Jobs(w.ctx, "1001"); err != nil || len(js) != 3 {
		t.Fatalf("%d jobs after the edit, want 3 (%v)", len(js), err)
	}
	if q, _ := decodeQueuedPin(js[2].Payload); q.Image != 3 || q.Key != imageKey(edited.Attachments[2].ID.String(), "") {
		t.Fatalf("the added picture's job: %+v", q)
	}
}
