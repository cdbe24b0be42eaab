package discordiotest

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

func TestSlashCommand(t *testing.T) {
	w := newWorld(t)
	f := w.f
	i := f.SlashCommand(w.in(), "pin", Opt{Name: "messages", Value: "1001 1002"}, Opt{Name: "when_full", Value: "queue"})
	if i.Type() != discord.InteractionTypeApplicationCommand || i.ApplicationID() != f.AppID() {
		t.Fatalf("type %d, application %d", i.Type(), i.ApplicationID())
	}
	d, ok := i.Data.(discord.SlashCommandInteractionData)
	if !ok {
		t.Fatalf("Data = %T, want slash command data", i.Data)
	}
	if d.CommandName() != "pin" || d.String("messages") != "1001 1002" || d.String("when_full") != "queue" {
		t.Fatalf("slash data: %q messages=%q when_full=%q", d.CommandName(), d.String("messages"), d.String("when_full"))
	}
	if _, ok := d.OptString("board"); ok {
		t.Fatal("an option not given is present")
	}
	if i.User().ID != w.user || i.GuildID() == nil || *i.GuildID() != w.guild || i.Channel().ID() != w.channel {
		t.Fatalf("user %d guild %v channel %d, want %d %d %d", i.User().ID, i.GuildID(), i.Channel().ID(), w.user, w.guild, w.channel)
	}
	if i.Locale() != discord.LocaleEnglishUS || !i.CreatedAt().Equal(f.Now()) {
		t.Fatalf("locale %q, created %v (Fake's time %v)", i.Locale(), i.CreatedAt(), f.Now())
	}
	// The token is the Fake's.
	wantOK(t, "Respond", f.Respond(bg, i.ID(), i.Token(), deferral))

	other := f.SlashCommand(w.in(), "pin")
	if other.ID() == i.ID() || other.Token() == i.Token() {
		t.Fatal("two interactions share an ID or a token")
	}
}

func TestAutocomplete(t *testing.T) {
	w := newWorld(t)
	i := w.f.Autocomplete(w.in(), "pin", Opt{Name: "messages", Value: "1001"}, Opt{Name: "board", Value: "ca", Focused: true})
	if i.Type() != discord.InteractionTypeAutocomplete {
		t.Fatalf("type %d", i.Type())
	}
	focused := i.Data.Focused()
	if focused.Name != "board" || i.Data.String("board") != "ca" || i.Data.String("messages") != "1001" || i.Data.CommandName != "pin" {
		t.Fatalf("autocomplete data: focused %q, board %q, messages %q", focused.Name, i.Data.String("board"), i.Data.String("messages"))
	}
}

func TestMessageCommand(t *testing.T) {
	w := newWorld(t)
	f := w.f
	i := f.MessageCommand(Invocation{UserID: w.user}, "Pin to Pinterest", w.message.ID)
	d, ok := i.Data.(discord.MessageCommandInteractionData)
	if !ok {
		t.Fatalf("Data = %T, want message command data", i.Data)
	}
	m := d.TargetMessage()
	if d.CommandName() != "Pin to Pinterest" || d.TargetID() != w.message.ID || m.ID != w.message.ID {
		t.Fatalf("message command: %q target %d resolved %d, want message %d", d.CommandName(), d.TargetID(), m.ID, w.message.ID)
	}
	if m.Content != "look" || len(m.Attachments) != 1 || m.Attachments[0].URL != w.message.Attachments[0].URL || m.Author.ID != w.message.Author.ID {
		t.Fatalf("resolved message = %+v, want %+v", m, w.message)
	}
	if i.Channel().ID() != w.channel {
		t.Fatalf("channel %d, want the message's %d", i.Channel().ID(), w.channel)
	}
}

func TestComponents(t *testing.T) {
	w := newWorld(t)
	f := w.f
	b := f.Button(w.in(), "queue:all", 0)
	bd, ok := b.Data.(discord.ButtonInteractionData)
	if !ok || bd.CustomID() != "queue:all" {
		t.Fatalf("button data = %T %+v", b.Data, b.Data)
	}
	if b.Message.ID == 0 || b.Message.Author.ID != f.BotID() || b.Message.ChannelID != w.channel || len(b.Message.Components) != 1 {
		t.Fatalf("button's message = %+v, want the bot's, in the channel, with its row", b.Message)
	}

	s := f.StringSelect(Invocation{UserID: w.user}, "queue:message", b.Message.ID, "1", "2")
	sd, ok := s.Data.(discord.StringSelectMenuInteractionData)
	if !ok || sd.CustomID() != "queue:message" || !slices.Equal(sd.Values, []string{"1", "2"}) {
		t.Fatalf("select data = %T %+v", s.Data, s.Data)
	}
	if s.Message.ID != b.Message.ID || s.Channel().ID() != w.channel {
		t.Fatalf("select on message %d in %d, want %d in %d", s.Message.ID, s.Channel().ID(), b.Message.ID, w.channel)
	}
	fresh := f.StringSelect(w.in(), "settings:switch", 0, "alice_art")
	if fresh.Message.ID == 0 || fresh.Message.ID == b.Message.ID {
		t.Fatal("a select without a message did not get a message of its own")
	}
}

// perms are what an interaction says of the user's and the bot's
// permissions in its channel.
func perms(i discord.Interaction) (member, channel, app discord.Permissions) {
	if m := i.Member(); m != nil {
		member = m.Permissions
	}
	if a := i.AppPermissions(); a != nil {
		app = *a
	}
	return member, i.Channel().Permissions, app
}

func TestPermissions(t *testing.T) {
	w := newWorld(t)
	f := w.f
	mod := f.AddRole(w.guild, discord.PermissionReadMessageHistory)
	admin := f.AddRole(w.guild, discord.PermissionAdministrator)
	reader := f.AddMember(w.guild, 0, mod)
	boss := f.AddMember(w.guild, 0, admin)
	banned := f.AddMember(w.guild, 0)
	f.SetOverwrites(w.channel,
		discord.RolePermissionOverwrite{RoleID: w.guild, Deny: discord.PermissionReadMessageHistory},
		discord.RolePermissionOverwrite{RoleID: mod, Allow: discord.PermissionReadMessageHistory},
		discord.MemberPermissionOverwrite{UserID: banned, Deny: discord.PermissionViewChannel},
	)
	read := discord.PermissionViewChannel | discord.PermissionReadMessageHistory
	for _, c := range []struct {
		name     string
		user     snowflake.ID
		channel  snowflake.ID
		all      bool
		has, not discord.Permissions
	}{
		{"plain member", w.user, w.channel, false, discord.PermissionViewChannel | discord.PermissionSendMessages, discord.PermissionReadMessageHistory},
		{"role overwrite", reader, w.channel, false, read, 0},
		{"administrator", boss, w.channel, true, 0, 0},
		{"owner", f.Owner(w.guild), w.channel, true, 0, 0},
		{"member overwrite", banned, w.channel, false, 0, discord.PermissionViewChannel | discord.PermissionSendMessages},
		{"thread takes its channel's", w.user, w.thread, false, discord.PermissionViewChannel, discord.PermissionReadMessageHistory},
		{"private thread", reader, w.private, false, read, 0},
	} {
		i := f.SlashCommand(Invocation{UserID: c.user, ChannelID: c.channel}, "pin")
		member, channel, _ := perms(i)
		if member != channel {
			t.Fatalf("%s: member.permissions %d != channel.permissions %d", c.name, member, channel)
		}
		switch {
		case c.all && member != discord.PermissionsAll:
			t.Errorf("%s: permissions %d, want all", c.name, member)
		case !member.Has(c.has) || member&c.not != 0:
			t.Errorf("%s: permissions %d, want %d and not %d", c.name, member, c.has, c.not)
		}
	}

	// The bot's own: @everyone's, none where it cannot see.
	i := f.SlashCommand(w.in(), "pin")
	if _, _, app := perms(i); !app.Has(discord.PermissionViewChannel|discord.PermissionSendMessages) || app.Has(discord.PermissionReadMessageHistory) {
		t.Fatalf("app_permissions %d, want @everyone's with the channel's overwrite", app)
	}
	f.SetHidden(w.channel, true)
	if _, _, app := perms(f.SlashCommand(w.in(), "pin")); app != discord.PermissionsNone {
		t.Fatalf("app_permissions in a hidden channel = %d", app)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as testing.T's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// misuse runs build with a Fake whose test is rec, and returns what it
// failed with.
func misuse(t *testing.T, build func(f *Fake, w world)) string {
	t.Helper()
	w := newWorld(t)
	rec := &fatalRecorder{TB: t}
	w.f.t = rec
	done := make(chan struct{})
	go func() {
		defer close(done)
		build(w.f, w)
	}()
	<-done
	w.f.t = t
	return rec.msg
}

func TestBuilderMisuse(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(f *Fake, w world)
		want  string
	}{
		{"channel of an unknown guild", func(f *Fake, w world) { f.AddChannel(1) }, "AddChannel: unknown guild 1"},
		{"thread of a thread", func(f *Fake, w world) { f.AddThread(w.thread, false) }, "is not a guild text channel"},
		{"non-member", func(f *Fake, w world) {
			f.SlashCommand(Invocation{UserID: f.AddUser(""), ChannelID: w.channel}, "pin")
		}, "is not a member"},
		{"unknown target", func(f *Fake, w world) { f.MessageCommand(w.in(), "Pin", 1) }, "unknown message 1"},
		{"target elsewhere", func(f *Fake, w world) {
			f.MessageCommand(Invocation{UserID: w.user, ChannelID: w.thread}, "Pin", w.message.ID)
		}, "is not in channel"},
		{"no focused option", func(f *Fake, w world) { f.Autocomplete(w.in(), "pin", Opt{Name: "board"}) }, "0 focused options"},
		{"role of another guild", func(f *Fake, w world) {
			f.AddMember(w.guild, w.user, f.AddRole(f.AddGuild(""), 0))
		}, "is not one of guild"},
	} {
		if got := misuse(t, c.build); !strings.Contains(got, c.want) {
			t.Errorf("%s: failed with %q, want %q", c.name, got, c.want)
		}
	}
}
