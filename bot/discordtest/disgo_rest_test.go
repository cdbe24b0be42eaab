package discordtest_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/disgoorg/disgo"
	"github.com/disgoorg/disgo/bot"
	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/handler"
	"github.com/disgoorg/disgo/rest"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// newRESTBot returns a disgo client that talks REST to s and opens no
// gateway connection, so it is safe under -race when used from one
// goroutine.
func newRESTBot(t *testing.T, s *discordtest.Server) *bot.Client {
	t.Helper()
	client, err := disgo.New(s.Token(),
		bot.WithLogger(slog.New(zerolog.NewSlogHandler(testLogger(t)))),
		bot.WithRestClientConfigOpts(rest.WithURL(s.APIURL())),
	)
	if err != nil {
		t.Fatalf("disgo.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		client.Close(ctx)
	})
	return client
}

var pinCommands = []discord.ApplicationCommandCreate{
	discord.SlashCommandCreate{
		Name:        "pin",
		Description: "Pin an image to Pinterest",
		Options: []discord.ApplicationCommandOption{
			discord.ApplicationCommandOptionString{Name: "link", Description: "Message link", Required: true},
			discord.ApplicationCommandOptionString{Name: "board", Description: "Board", Autocomplete: true},
		},
	},
	discord.MessageCommandCreate{Name: "Pin to Pinterest"},
}

func TestDisgoRESTCommandBulkOverwriteIsRecorded(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	g, err := s.AddGuild(discordtest.Guild{})
	if err != nil {
		t.Fatal(err)
	}
	client := newRESTBot(t, s)
	if client.ApplicationID != s.ApplicationID() {
		t.Fatalf("disgo read application ID %d from the token, want %d", client.ApplicationID, s.ApplicationID())
	}

	if err := handler.SyncCommands(client, pinCommands, nil); err != nil {
		t.Fatalf("global sync: %v", err)
	}
	first := s.Commands(0)
	if len(first) != 2 || first[0].Name != "pin" || first[0].Type != discord.ApplicationCommandTypeSlash ||
		first[1].Name != "Pin to Pinterest" || first[1].Type != discord.ApplicationCommandTypeMessage {
		t.Fatalf("global commands = %+v, want pin and Pin to Pinterest", first)
	}

	// Overwriting again keeps the IDs of commands that keep name and type.
	if err := handler.SyncCommands(client, pinCommands[:1], nil); err != nil {
		t.Fatalf("second global sync: %v", err)
	}
	second := s.Commands(0)
	if len(second) != 1 || second[0].ID != first[0].ID || second[0].Version == first[0].Version {
		t.Errorf("after overwrite: %+v, want pin alone with ID %d and a new version", second, first[0].ID)
	}

	if err := handler.SyncCommands(client, pinCommands, []snowflake.ID{g.ID}); err != nil {
		t.Fatalf("guild sync: %v", err)
	}
	if got := s.Commands(g.ID); len(got) != 2 || got[0].GuildID != g.ID {
		t.Errorf("guild commands = %+v, want 2 for guild %d", got, g.ID)
	}
	syncs := s.CommandSyncs()
	if len(syncs) != 3 || syncs[0].GuildID != 0 || syncs[2].GuildID != g.ID || len(syncs[1].Names) != 1 {
		t.Errorf("syncs = %+v, want global, global, guild", syncs)
	}

	// Discord refuses names with capitals for slash commands.
	bad := []discord.ApplicationCommandCreate{discord.SlashCommandCreate{Name: "Pin", Description: "x"}}
	var restErr *rest.Error
	if err := handler.SyncCommands(client, bad, nil); !errors.As(err, &restErr) || restErr.Code != 50035 {
		t.Errorf("sync of an invalid name: %v, want a 50035 error", err)
	}
	if got := len(s.CommandSyncs()); got != 3 {
		t.Errorf("a refused sync was recorded: %d syncs", got)
	}
}

func TestDisgoRESTHonorsRetryAfter(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	client := newRESTBot(t, s)
	if err := s.Inject(discordtest.RouteGetMessage, 1, discordtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}

	m, err := client.Rest.GetMessage(w.channel.ID, w.message.ID)
	if err != nil {
		t.Fatalf("GetMessage: %v", err)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].ContentType == nil || *m.Attachments[0].ContentType != "image/png" {
		t.Errorf("message attachments = %+v, want one image/png", m.Attachments)
	}
	rqs := s.Requests()
	if len(rqs) != 2 || rqs[0].Status != 429 || !rqs[0].Injected || rqs[1].Status != 200 {
		t.Fatalf("requests = %+v, want a 429 then a 200", rqs)
	}
	// Retry-After is whole seconds rounded up: 0.05 s asks for 1 s.
	if gap := rqs[1].At.Sub(rqs[0].At); gap < 950*time.Millisecond {
		t.Errorf("disgo retried after %v, want about a second", gap)
	}
}

func TestDisgoRESTErrors(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	secret, err := s.AddChannel(discordtest.Channel{
		GuildID:    w.guild.ID,
		Overwrites: []discordtest.Overwrite{discordtest.RoleOverwrite(w.guild.ID, 0, discord.PermissionViewChannel)},
	})
	if err != nil {
		t.Fatal(err)
	}
	client := newRESTBot(t, s)

	check := func(name string, err error, status int, code rest.JSONErrorCode) {
		t.Helper()
		var restErr *rest.Error
		if !errors.As(err, &restErr) || restErr.Response.StatusCode != status || restErr.Code != code {
			t.Errorf("%s: %v, want %d with code %d", name, err, status, code)
		}
	}
	_, err = client.Rest.GetMessage(w.channel.ID, 42)
	check("unknown message", err, 404, 10008)
	_, err = client.Rest.GetMessage(secret.ID, 42)
	check("hidden channel", err, 403, 50001)
	if err := s.Inject(discordtest.RouteGetMessage, 1, discordtest.Fault{Status: 503}); err != nil {
		t.Fatal(err)
	}
	_, err = client.Rest.GetMessage(w.channel.ID, w.message.ID)
	check("injected 503", err, 503, 0)
	if _, err := client.Rest.GetMessage(w.channel.ID, w.message.ID); err != nil {
		t.Errorf("after the fault: %v", err)
	}
}
