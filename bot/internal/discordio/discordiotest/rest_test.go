package discordiotest

import (
	"net/http"
	"slices"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

func TestMessage(t *testing.T) {
	w := newWorld(t)
	f := w.f
	m, err := f.Message(bg, w.channel, w.message.ID)
	wantOK(t, "Message", err)
	if m.Content != "look" || len(m.Attachments) != 1 || m.Attachments[0].URL == "" || m.Attachments[0].Filename != "cat.png" {
		t.Fatalf("Message = %+v, want the content and the image with its URL", m)
	}
	if m.GuildID == nil || *m.GuildID != w.guild || m.Author.ID == 0 || m.CreatedAt.IsZero() {
		t.Fatalf("Message: guild %v, author %d, time %v: not filled in", m.GuildID, m.Author.ID, m.CreatedAt)
	}
	m.Attachments[0].URL = "changed"
	again, _ := f.Message(bg, w.channel, w.message.ID)
	if again.Attachments[0].URL == "changed" {
		t.Fatal("a fetched message shares the Fake's attachments")
	}

	_, err = f.Message(bg, w.channel, 12345)
	wantRefusal(t, "unknown message", err, http.StatusNotFound, 10008)
	_, err = f.Message(bg, w.thread, w.message.ID)
	wantRefusal(t, "message of another channel", err, http.StatusNotFound, 10008)
	_, err = f.Message(bg, 12345, w.message.ID)
	wantRefusal(t, "unknown channel", err, http.StatusNotFound, 10003)
	f.SetHidden(w.channel, true)
	_, err = f.Message(bg, w.channel, w.message.ID)
	wantRefusal(t, "hidden channel", err, http.StatusForbidden, discordio.CodeMissingAccess)
	f.SetHidden(w.channel, false)
	f.DeleteMessage(w.message.ID)
	_, err = f.Message(bg, w.channel, w.message.ID)
	wantRefusal(t, "deleted message", err, http.StatusNotFound, 10008)
}

func TestChannel(t *testing.T) {
	w := newWorld(t)
	f := w.f
	role := f.AddRole(w.guild, discord.PermissionManageMessages)
	over := []discord.PermissionOverwrite{
		discord.RolePermissionOverwrite{RoleID: w.guild, Deny: discord.PermissionReadMessageHistory},
		discord.RolePermissionOverwrite{RoleID: role, Allow: discord.PermissionReadMessageHistory},
		discord.MemberPermissionOverwrite{UserID: w.user, Deny: discord.PermissionViewChannel},
	}
	f.SetOverwrites(w.channel, over...)

	ch, err := f.Channel(bg, w.channel)
	wantOK(t, "Channel", err)
	text, ok := ch.(discord.GuildTextChannel)
	if !ok {
		t.Fatalf("Channel = %T, want discord.GuildTextChannel", ch)
	}
	if text.GuildID() != w.guild || !slices.EqualFunc(text.PermissionOverwrites(), over, func(a, b discord.PermissionOverwrite) bool { return a == b }) {
		t.Fatalf("channel: guild %d, overwrites %+v; want %d, %+v", text.GuildID(), text.PermissionOverwrites(), w.guild, over)
	}

	for _, c := range []struct {
		id  snowflake.ID
		typ discord.ChannelType
	}{{w.thread, discord.ChannelTypeGuildPublicThread}, {w.private, discord.ChannelTypeGuildPrivateThread}} {
		ch, err := f.Channel(bg, c.id)
		wantOK(t, "Channel of a thread", err)
		th, ok := ch.(discord.GuildThread)
		if !ok || th.Type() != c.typ || th.ParentID() == nil || *th.ParentID() != w.channel || th.GuildID() != w.guild {
			t.Fatalf("thread %d = %T %+v, want a %d thread of channel %d", c.id, ch, ch, c.typ, w.channel)
		}
	}

	dm, err := f.OpenDM(bg, w.user)
	wantOK(t, "OpenDM", err)
	ch, err = f.Channel(bg, dm)
	wantOK(t, "Channel of a DM", err)
	if d, ok := ch.(discord.DMChannel); !ok || d.ID() != dm {
		t.Fatalf("DM channel = %T %+v", ch, ch)
	}

	_, err = f.Channel(bg, 12345)
	wantRefusal(t, "unknown channel", err, http.StatusNotFound, 10003)
	f.SetHidden(w.thread, true)
	_, err = f.Channel(bg, w.thread)
	wantRefusal(t, "hidden thread", err, http.StatusForbidden, discordio.CodeMissingAccess)
}

func TestGuildRolesMember(t *testing.T) {
	w := newWorld(t)
	f := w.f
	mod := f.AddRole(w.guild, discord.PermissionManageMessages)
	f.AddMember(w.guild, w.user, mod)

	g, err := f.Guild(bg, w.guild)
	wantOK(t, "Guild", err)
	if g.ID != w.guild || g.OwnerID != f.Owner(w.guild) || g.OwnerID == w.user {
		t.Fatalf("Guild = %d owned by %d, want %d owned by %d", g.ID, g.OwnerID, w.guild, f.Owner(w.guild))
	}
	roles, err := f.Roles(bg, w.guild)
	wantOK(t, "Roles", err)
	if len(roles) != 2 || roles[0].ID != w.guild || roles[0].Permissions != DefaultEveryone ||
		roles[1].ID != mod || roles[1].Permissions != discord.PermissionManageMessages {
		t.Fatalf("Roles = %+v, want @everyone then the moderator role", roles)
	}
	f.SetRolePermissions(w.guild, discord.PermissionsNone)
	roles, _ = f.Roles(bg, w.guild)
	if roles[0].Permissions != discord.PermissionsNone {
		t.Fatalf("@everyone after SetRolePermissions: %d", roles[0].Permissions)
	}

	m, err := f.Member(bg, w.guild, w.user)
	wantOK(t, "Member", err)
	if m.User.ID != w.user || !slices.Equal(m.RoleIDs, []snowflake.ID{mod}) || m.GuildID != w.guild {
		t.Fatalf("Member = %+v, want user %d with role %d", m, w.user, mod)
	}

	other := f.AddUser("newowner")
	f.SetOwner(w.guild, other)
	g, _ = f.Guild(bg, w.guild)
	if g.OwnerID != other {
		t.Fatalf("owner after SetOwner = %d, want %d", g.OwnerID, other)
	}

	_, err = f.Guild(bg, 12345)
	wantRefusal(t, "Guild of an unknown guild", err, http.StatusNotFound, 10004)
	_, err = f.Roles(bg, 12345)
	wantRefusal(t, "Roles of an unknown guild", err, http.StatusNotFound, 10004)
	_, err = f.Member(bg, 12345, w.user)
	wantRefusal(t, "Member of an unknown guild", err, http.StatusNotFound, 10004)
	_, err = f.Member(bg, w.guild, 12345)
	wantRefusal(t, "unknown member", err, http.StatusNotFound, 10007)
	f.RemoveMember(w.guild, w.user)
	_, err = f.Member(bg, w.guild, w.user)
	wantRefusal(t, "member who left", err, http.StatusNotFound, 10007)
}

func TestSend(t *testing.T) {
	w := newWorld(t)
	f := w.f
	for _, s := range []string{"one", "two"} {
		wantOK(t, "Send "+s, f.Send(bg, w.channel, discord.MessageCreate{Content: s, AllowedMentions: &discord.AllowedMentions{}}))
	}
	sent := f.Sent(w.channel)
	if len(sent) != 2 || sent[0].Content != "one" || sent[1].Content != "two" || sent[0].AllowedMentions == nil {
		t.Fatalf("Sent = %+v, want one then two, with their allowed mentions", sent)
	}
	wantOK(t, "Send to a thread", f.Send(bg, w.thread, discord.MessageCreate{Content: "in thread"}))
	if got := f.Sent(w.thread); len(got) != 1 {
		t.Fatalf("Sent(thread) = %+v", got)
	}

	wantRefusal(t, "empty message", f.Send(bg, w.channel, discord.MessageCreate{}), http.StatusBadRequest, 50006)
	long := string(make([]byte, 2001))
	wantRefusal(t, "long message", f.Send(bg, w.channel, discord.MessageCreate{Content: long}), http.StatusBadRequest, 50035)
	wantRefusal(t, "unknown channel", f.Send(bg, 12345, discord.MessageCreate{Content: "x"}), http.StatusNotFound, 10003)
	f.SetHidden(w.channel, true)
	wantRefusal(t, "hidden channel", f.Send(bg, w.channel, discord.MessageCreate{Content: "x"}), http.StatusForbidden, discordio.CodeMissingAccess)
	f.SetHidden(w.channel, false)
	f.SetOverwrites(w.channel, discord.MemberPermissionOverwrite{UserID: f.BotID(), Deny: discord.PermissionSendMessages})
	wantRefusal(t, "no send permission", f.Send(bg, w.channel, discord.MessageCreate{Content: "x"}), http.StatusForbidden, 50013)
	if got := f.Sent(w.channel); len(got) != 2 {
		t.Fatalf("refused sends were recorded: %+v", got)
	}
}

func TestDMs(t *testing.T) {
	w := newWorld(t)
	f := w.f
	dm, err := f.OpenDM(bg, w.user)
	wantOK(t, "OpenDM", err)
	again, err := f.OpenDM(bg, w.user)
	wantOK(t, "OpenDM again", err)
	if again != dm {
		t.Fatalf("OpenDM gave %d then %d, want one DM channel", dm, again)
	}
	wantOK(t, "Send DM", f.Send(bg, dm, discord.MessageCreate{Content: "your pin is done"}))
	if got := f.DMs(w.user); len(got) != 1 || got[0].Content != "your pin is done" {
		t.Fatalf("DMs = %+v", got)
	}

	f.SetDMsClosed(w.user, true)
	err = f.Send(bg, dm, discord.MessageCreate{Content: "refused"})
	wantRefusal(t, "DMs closed", err, http.StatusForbidden, discordio.CodeCannotDM)
	if !discordio.DMRefused(err) {
		t.Fatalf("DMRefused(%v) = false", err)
	}
	if got := f.DMs(w.user); len(got) != 1 {
		t.Fatalf("a refused DM was recorded: %+v", got)
	}
	f.SetDMsClosed(w.user, false)
	wantOK(t, "Send DM once open", f.Send(bg, dm, discord.MessageCreate{Content: "again"}))

	_, err = f.OpenDM(bg, 12345)
	wantRefusal(t, "OpenDM to an unknown user", err, http.StatusBadRequest, 50033)
	_, err = f.OpenDM(bg, f.BotID())
	wantRefusal(t, "OpenDM to the bot", err, http.StatusBadRequest, 50033)
	if got := f.DMs(12345); got != nil {
		t.Fatalf("DMs of a user never DMed = %+v", got)
	}
}

func TestSetCommandsAndGateway(t *testing.T) {
	info := discordio.GatewayInfo{URL: "wss://example.test", Shards: 4, MaxConcurrency: 2}
	w := newWorld(t, WithGateway(info))
	f := w.f
	cmds := []discord.ApplicationCommandCreate{
		discord.SlashCommandCreate{Name: "pin", Description: "pin"},
		discord.MessageCommandCreate{Name: "Pin to Pinterest"},
	}
	n, err := f.SetCommands(bg, cmds)
	wantOK(t, "SetCommands", err)
	if n != 2 || len(f.Commands()) != 2 || f.Commands()[0].CommandName() != "pin" {
		t.Fatalf("SetCommands = %d, Commands = %+v", n, f.Commands())
	}
	first := f.SlashCommand(w.in(), "pin").Data.CommandID()
	n, err = f.SetCommands(bg, cmds[:1])
	wantOK(t, "SetCommands again", err)
	if n != 1 || f.SlashCommand(w.in(), "pin").Data.CommandID() != first {
		t.Fatalf("after a second SetCommands: %d commands, command ID changed from %d", n, first)
	}
	_, err = f.SetCommands(bg, []discord.ApplicationCommandCreate{cmds[0], cmds[0]})
	wantRefusal(t, "duplicate names", err, http.StatusBadRequest, 50035)

	got, err := f.GatewayBot(bg)
	wantOK(t, "GatewayBot", err)
	if got != info {
		t.Fatalf("GatewayBot = %+v, want %+v", got, info)
	}
}
