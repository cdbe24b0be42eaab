package discordiotest

import (
	"context"
	"errors"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// world is a guild with a channel, a public and a private thread in it, a
// user who is a member, and a message with an image in the channel.
type world struct {
	f               *Fake
	guild           snowflake.ID
	channel         snowflake.ID
	thread, private snowflake.ID
	user            snowflake.ID
	message         discord.Message
}

func newWorld(t *testing.T, opts ...Option) world {
	t.Helper()
	f := New(t, opts...)
	w := world{f: f, guild: f.AddGuild("demo")}
	w.channel = f.AddChannel(w.guild)
	w.thread = f.AddThread(w.channel, false)
	w.private = f.AddThread(w.channel, true)
	w.user = f.AddMember(w.guild, 0)
	w.message = f.AddMessage(w.channel, discord.Message{
		Content:     "look",
		Attachments: []discord.Attachment{{Filename: "cat.png", ContentType: ptr("image/png")}},
	})
	return w
}

// in is an invocation of the world's user in its channel.
func (w world) in() Invocation { return Invocation{UserID: w.user, ChannelID: w.channel} }

// wantRefusal checks that err is Discord's refusal with status and code.
func wantRefusal(t *testing.T, what string, err error, status, code int) {
	t.Helper()
	e, ok := discordio.AsError(err)
	if !ok {
		t.Fatalf("%s: err = %v, want HTTP %d code %d", what, err, status, code)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("%s: HTTP %d code %d (%s), want HTTP %d code %d", what, e.Status, e.Code, e.Message, status, code)
	}
}

// wantOK fails the test on err.
func wantOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// deferral is the deferred ephemeral response the bot sends first.
var deferral = discord.InteractionResponse{
	Type: discord.InteractionResponseTypeDeferredCreateMessage,
	Data: discord.MessageCreate{Flags: discord.MessageFlagEphemeral},
}

func text(s string) discord.MessageUpdate { return discord.MessageUpdate{Content: &s} }

var bg = context.Background()

func isDeadline(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
