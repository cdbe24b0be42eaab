package discordtest_test

import (
	"net/http"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/rest"
	"github.com/disgoorg/snowflake/v2"
)

// TestDMs: disgo opens a DM channel (the same one twice), sends to it,
// and reads the refusal of a user who closed their DMs.
func TestDMs(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	client := newRESTBot(t, s)

	if _, ok := s.DMChannel(w.user.UserID); ok {
		t.Fatal("a DM channel exists before the bot opened one")
	}
	dm, err := client.Rest.CreateDMChannel(w.user.UserID)
	if err != nil {
		t.Fatalf("CreateDMChannel: %v", err)
	}
	if id, ok := s.DMChannel(w.user.UserID); !ok || id != dm.ID() || dm.Type() != discord.ChannelTypeDM ||
		len(dm.Recipients) != 1 || dm.Recipients[0].ID != w.user.UserID {
		t.Fatalf("DM channel %+v; the stand-in has %d (%v)", dm, id, ok)
	}
	again, err := client.Rest.CreateDMChannel(w.user.UserID)
	if err != nil || again.ID() != dm.ID() {
		t.Fatalf("second CreateDMChannel: %v, %v; want the same channel %d", again, err, dm.ID())
	}

	none := discord.AllowedMentions{Parse: []discord.AllowedMentionType{}, Users: []snowflake.ID{}, Roles: []snowflake.ID{}}
	m, err := client.Rest.CreateMessage(dm.ID(), discord.MessageCreate{Content: "hello <@1>", AllowedMentions: &none})
	if err != nil {
		t.Fatalf("CreateMessage to the DM channel: %v", err)
	}
	got := s.DMs(w.user.UserID)
	if len(got) != 1 || got[0].ID != m.ID || got[0].Content != "hello <@1>" || got[0].AuthorID != s.BotUserID() ||
		got[0].GuildID != 0 || got[0].AllowedMentions == nil || got[0].AllowedMentions.Parse == nil ||
		len(got[0].AllowedMentions.Parse)+len(got[0].AllowedMentions.Users)+len(got[0].AllowedMentions.Roles) != 0 {
		t.Fatalf("DMs = %+v", got)
	}
	if ch, err := client.Rest.GetChannel(dm.ID()); err != nil || ch.Type() != discord.ChannelTypeDM {
		t.Errorf("GetChannel of the DM channel: %v, %v", ch, err)
	}

	s.SetDMsOpen(w.user.UserID, false)
	_, err = client.Rest.CreateMessage(dm.ID(), discord.MessageCreate{Content: "again"})
	if !rest.IsJSONErrorCode(err, 50007) {
		t.Fatalf("CreateMessage to closed DMs: %v, want 403 50007", err)
	}
	if e, ok := err.(*rest.Error); !ok || e.Response.StatusCode != http.StatusForbidden || e.Message != "Cannot send messages to this user" {
		t.Errorf("closed DMs answered %v", err)
	}
	s.SetDMsOpen(w.user.UserID, true)
	if _, err := client.Rest.CreateMessage(dm.ID(), discord.MessageCreate{Content: "open again"}); err != nil {
		t.Errorf("CreateMessage after SetDMsOpen(true): %v", err)
	}
	if n := len(s.DMs(w.user.UserID)); n != 2 {
		t.Errorf("%d DMs stored, want 2", n)
	}

	// Guild channel messages keep their allowed_mentions too.
	if _, err := client.Rest.CreateMessage(w.channel.ID, discord.MessageCreate{Content: "x", AllowedMentions: &none}); err != nil {
		t.Fatal(err)
	}
	msgs := s.Messages(w.channel.ID)
	if last := msgs[len(msgs)-1]; last.AllowedMentions == nil || last.AllowedMentions.Parse == nil {
		t.Errorf("guild message allowed_mentions = %+v", last.AllowedMentions)
	}
}

func TestCreateDMRefusals(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for i, st := range []struct {
		body   any
		status int
		code   int
	}{
		{map[string]any{"recipient_id": "123"}, 400, 50033},                  // unknown user
		{map[string]any{"recipient_id": s.BotUserID().String()}, 400, 50033}, // the bot itself
		{map[string]any{}, 400, 50035},
	} {
		r := call(t, s, "POST", "/users/@me/channels", st.body, true)
		if r.status != st.status || r.code != st.code {
			t.Errorf("step %d: %d/%d want %d/%d: %s", i, r.status, r.code, st.status, st.code, r.body)
		}
	}
	if r := call(t, s, "POST", "/users/@me/channels", map[string]any{"recipient_id": "1"}, false); r.status != 401 {
		t.Errorf("without the bot token: %d want 401", r.status)
	}
}
