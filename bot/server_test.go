package bot

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
)

// addMemberWith adds a member with a role of perms to guild.
func (w *world) addMemberWith(guild snowflake.ID, name string, perms discord.Permissions) snowflake.ID {
	w.t.Helper()
	role, err := w.dc.AddRole(discordtest.Role{GuildID: guild, Name: name + "-role", Permissions: perms})
	if err != nil {
		w.t.Fatal(err)
	}
	m, err := w.dc.AddMember(discordtest.Member{GuildID: guild, Username: name, Roles: []snowflake.ID{role.ID}})
	if err != nil {
		w.t.Fatal(err)
	}
	return m.UserID
}

// server runs /server in the world's channel, with pin_emoji when one is
// given.
func (w *world) server(user snowflake.ID, pinEmoji ...string) string {
	w.t.Helper()
	return w.serverIn(w.channel.ID, user, pinEmoji...)
}

// serverIn runs /server in channel.
func (w *world) serverIn(channel, user snowflake.ID, pinEmoji ...string) string {
	w.t.Helper()
	var opts []discordtest.CommandOption
	if len(pinEmoji) > 0 {
		opts = append(opts, discordtest.CommandOption{Name: optPinEmoji, Value: pinEmoji[0]})
	}
	text, _ := w.run(discordtest.Invocation{ChannelID: channel, UserID: user, Data: discordtest.ChatInput{Name: cmdServer, Options: opts}})
	return text
}

// storedEmoji returns the pin emoji the store holds for guild.
func (w *world) storedEmoji(guild snowflake.ID) string {
	w.t.Helper()
	gs, err := w.links.GuildSettings(w.ctx, guild.String())
	if err != nil {
		w.t.Fatal(err)
	}
	return gs.PinEmoji
}

// TestServerCommand: /server shows and changes the server's pin emoji for
// its managers (Manage Server or Administrator, checked on use), refuses
// everyone else and what is not one emoji, goes back to the default with
// reset, and answers outside a server that it works in one.
func TestServerCommand(t *testing.T) {
	w := newWorld(t, worldOptions{})
	alice := w.addUser("alice")
	mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageGuild)
	admin := w.addMemberWith(w.guild.ID, "admin", discord.PermissionAdministrator)
	// Manage Messages in a channel is not Manage Server.
	helper := w.addMemberWith(w.guild.ID, "helper", discord.PermissionManageMessages|discord.PermissionManageChannels)

	steps := []struct {
		user   snowflake.ID
		emoji  []string // the pin_emoji option, when given
		want   string   // in the answer
		stored string   // the server's pin emoji afterwards
	}{
		{alice, []string{"🖼️"}, msgServerNotManager, ""},
		{alice, nil, msgServerNotManager, ""},
		{helper, []string{"🖼️"}, msgServerNotManager, ""},
		{mod, nil, "Pin reaction: 📌 (Pinbot's default)", ""},
		{mod, []string{"🖼️"}, "a linked member's 🖼️ on a message now pins", "🖼️"},
		{mod, nil, "Pin reaction: 🖼️ (chosen for this server; Pinbot's default is 📌)", "🖼️"},
		{mod, []string{"hello"}, "`hello` cannot be this server's pin reaction", "🖼️"},
		{mod, []string{"🖼️ 📌"}, "cannot be this server's pin reaction", "🖼️"},
		{mod, []string{" "}, "cannot be this server's pin reaction", "🖼️"},
		{admin, []string{"<:pin:123456789012345678>"}, "<:pin:123456789012345678> on a message now pins", "pin:123456789012345678"},
		{alice, []string{"reset"}, msgServerNotManager, "pin:123456789012345678"},
		{admin, []string{"Reset"}, "uses Pinbot's default pin reaction again, 📌", ""},
		{mod, nil, "Pin reaction: 📌 (Pinbot's default)", ""},
	}
	for i, st := range steps {
		got := w.server(st.user, st.emoji...)
		if !strings.Contains(got, st.want) {
			t.Errorf("step %d: /server %v answered %q, want %q in it", i, st.emoji, got, st.want)
		}
		if e := w.storedEmoji(w.guild.ID); e != st.stored {
			t.Errorf("step %d: stored emoji %q, want %q", i, e, st.stored)
		}
	}

	// Outside a server: the command works in one (Discord offers it only
	// there; the bot checks all the same).
	inv := invocation{ctx: context.Background(), userID: mod, perms: discord.PermissionManageGuild, log: zerolog.Nop()}
	if r := w.bot.server(inv, "🖼️", true); r.content != msgGuildOnly {
		t.Errorf("in a DM: %q, want %q", r.content, msgGuildOnly)
	}
	w.checkMetrics("server", metric{"pinbot_interactions_total", []string{"command", "server", "result", "ok"}, float64(len(steps))})
}

// TestServerCommandDefinition: /server is registered for servers only,
// offered by default to members with Manage Server alone.
func TestServerCommandDefinition(t *testing.T) {
	var def discord.ApplicationCommandCreate
	for _, c := range commands(pinRule{limit: 100, short: "12h", adj: "12-hour"}) {
		if c.CommandName() == cmdServer {
			def = c
		}
	}
	if def == nil {
		t.Fatal("/server is not registered")
	}
	raw, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Perms    string `json:"default_member_permissions"`
		Contexts []int  `json:"contexts"`
		Options  []struct {
			Name     string `json:"name"`
			Required bool   `json:"required"`
		} `json:"options"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatInt(int64(discord.PermissionManageGuild), 10); got.Perms != want {
		t.Errorf("default_member_permissions %q, want %q (Manage Server): %s", got.Perms, want, raw)
	}
	if len(got.Contexts) != 1 || got.Contexts[0] != int(discord.InteractionContextTypeGuild) {
		t.Errorf("contexts %v, want the guild's alone", got.Contexts)
	}
	if len(got.Options) != 1 || got.Options[0].Name != optPinEmoji || got.Options[0].Required {
		t.Errorf("options %+v, want pin_emoji, optional", got.Options)
	}
}

// TestServerReactions: on the stand-in, a server that chose 🖼️ pins with
// 🖼️ and no longer with 📌, while another server keeps 📌; reset brings 📌
// back.
func TestServerReactions(t *testing.T) {
	w := newReactionWorld(t, worldOptions{})
	alice := w.addUser("alice")
	w.link(alice, "a1", "alice_art")
	mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageGuild)
	other, err := w.dc.AddGuild(discordtest.Guild{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	otherCh, err := w.dc.AddChannel(discordtest.Channel{GuildID: other.ID, Name: "general"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.dc.AddMember(discordtest.Member{GuildID: other.ID, UserID: alice}); err != nil {
		t.Fatal(err)
	}

	if got := w.server(mod, "🖼️"); !strings.Contains(got, "🖼️") {
		t.Fatalf("/server pin_emoji:🖼️ answered %q", got)
	}
	home := w.addImages(w.channel.ID, 1, "home")
	away := w.addImages(otherCh.ID, 1, "away")
	steps := []struct {
		m     discordtest.Message
		emoji string
		want  string
		pins  int // pins made so far
	}{
		{home, "📌", reactionIgnored, 0},
		{home, "🖼", reactionRan, 1}, // Discord may drop the variation selector
		{away, "🖼️", reactionIgnored, 1},
		{away, "📌", reactionRan, 2},
	}
	for i, st := range steps {
		if e := w.react(st.m, alice, st.emoji, true); e.result != st.want {
			t.Errorf("step %d: %s on %d: %q, want %q", i, st.emoji, st.m.ID, e.result, st.want)
		}
		if got := len(w.ps.Pins()); got != st.pins {
			t.Errorf("step %d: %d pins, want %d", i, got, st.pins)
		}
	}
	if dms := w.dc.DMs(alice); len(dms) == 0 || !strings.Contains(dms[len(dms)-1].Content, "📌") {
		t.Errorf("the report of the other server's reaction names another emoji: %v", dms)
	}

	if got := w.server(mod, "reset"); !strings.Contains(got, "📌") {
		t.Fatalf("/server pin_emoji:reset answered %q", got)
	}
	again := w.addImages(w.channel.ID, 1, "again")
	if e := w.react(again, alice, "🖼️", true); e.result != reactionIgnored {
		t.Errorf("🖼️ after reset: %q, want ignored", e.result)
	}
	if e := w.react(again, alice, "📌", true); e.result != reactionRan {
		t.Errorf("📌 after reset: %q, want ran", e.result)
	}
}

// TestServerReactionsReadSettings: the bot reads a server's settings from
// the store once per guildCacheFor, not per reaction: a change another
// cluster member stored judges the server's reactions after that time.
func TestServerReactionsReadSettings(t *testing.T) {
	w := newReactionWorld(t, worldOptions{})
	bob := w.addUser("bob") // links nothing: a pin reaction is not_linked
	m := w.addImages(w.channel.ID, 1, "cat")
	home := w.guild.ID.String()

	// Stored before the bot saw any reaction of the server.
	if err := w.links.SetPinEmoji(w.ctx, home, "🖼️"); err != nil {
		t.Fatal(err)
	}
	if e := w.react(m, bob, "🖼️", true); e.result != reactionNotLinked {
		t.Fatalf("🖼️ stored before the first reaction: %q, want not_linked", e.result)
	}
	// Another member stores 🎨: this one judges by what it read until
	// guildCacheFor has passed.
	if err := w.links.SetPinEmoji(w.ctx, home, "🎨"); err != nil {
		t.Fatal(err)
	}
	if e := w.react(m, bob, "🎨", true); e.result != reactionIgnored {
		t.Fatalf("🎨 within guildCacheFor: %q, want ignored", e.result)
	}
	w.pclock.Advance(guildCacheFor)
	if e := w.react(m, bob, "🎨", false); e.result != reactionNone {
		t.Fatalf("🎨 taken off after guildCacheFor: %q, want none", e.result)
	}
}

// gatedGuilds is a store whose reads of one server's settings wait for
// gate.
type gatedGuilds struct {
	links.Store
	guild string
	gate  chan struct{}
}

func (g *gatedGuilds) GuildSettings(ctx context.Context, guildID string) (links.GuildSettings, error) {
	if guildID == g.guild {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return links.GuildSettings{ID: guildID}, ctx.Err()
		}
	}
	return g.Store.GuildSettings(ctx, guildID)
}

// TestServerReactionsHeldInOrder: while a server's settings are read, the
// gateway's reading goroutine goes on (another server's reactions are
// worked on), and the server's reactions wait, then are judged by what
// was read and run in the order they came.
func TestServerReactionsHeldInOrder(t *testing.T) {
	gated := &gatedGuilds{gate: make(chan struct{})}
	w := newReactionWorld(t, worldOptions{bot: func(c *Config) {
		gated.Store = c.Links
		c.Links = gated
	}})
	gated.guild = w.guild.ID.String()
	bob := w.addUser("bob")
	m := w.addImages(w.channel.ID, 1, "cat")
	other, err := w.dc.AddGuild(discordtest.Guild{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	otherCh, err := w.dc.AddChannel(discordtest.Channel{GuildID: other.ID, Name: "general"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.dc.AddMember(discordtest.Member{GuildID: other.ID, UserID: bob}); err != nil {
		t.Fatal(err)
	}
	away := w.addImages(otherCh.ID, 1, "away")
	// A read that failed (timed out) would judge by the bot's 📌.
	if err := w.links.SetPinEmoji(w.ctx, gated.guild, "🖼️"); err != nil {
		t.Fatal(err)
	}

	for _, add := range []bool{true, false} {
		var err error
		if add {
			err = w.dc.AddReaction(m.ChannelID, m.ID, bob, "🖼️")
		} else {
			err = w.dc.RemoveReaction(m.ChannelID, m.ID, bob, "🖼️")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if e := w.react(away, bob, "📌", true); e.result != reactionNotLinked {
		t.Fatalf("the other server's reaction while the first one's settings are read: %q", e.result)
	}
	close(gated.gate)
	for i, want := range []struct {
		added  bool
		result string
	}{{true, reactionNotLinked}, {false, reactionNone}} {
		e := w.reacted()
		if e.r.MessageID != m.ID || e.r.Added != want.added || e.result != want.result {
			t.Errorf("event %d: %+v %q, want added %v %q", i, e.r, e.result, want.added, want.result)
		}
	}
}

// failingGuilds is a store whose reads of servers' settings fail while
// fail is set.
type failingGuilds struct {
	links.Store
	fail atomic.Bool
}

func (f *failingGuilds) GuildSettings(ctx context.Context, guildID string) (links.GuildSettings, error) {
	if f.fail.Load() {
		return links.GuildSettings{ID: guildID}, errors.New("store unavailable")
	}
	return f.Store.GuildSettings(ctx, guildID)
}

// TestServerReactionsReadFails: a server whose settings cannot be read
// is judged by what was read before (the bot's emoji when nothing was),
// and read again guildRetryAfter later.
func TestServerReactionsReadFails(t *testing.T) {
	failing := &failingGuilds{}
	failing.fail.Store(true)
	w := newReactionWorld(t, worldOptions{bot: func(c *Config) {
		failing.Store = c.Links
		c.Links = failing
	}})
	bob := w.addUser("bob")
	if err := w.links.SetPinEmoji(w.ctx, w.guild.ID.String(), "🖼️"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		advance time.Duration
		fail    bool
		emoji   string
		want    string
	}{
		{0, true, "🖼️", reactionIgnored},                  // nothing read: the bot's 📌
		{0, true, "📌", reactionNotLinked},                 // judged by it
		{0, false, "🖼️", reactionIgnored},                 // within guildRetryAfter: not read again
		{guildRetryAfter, false, "🖼️", reactionNotLinked}, // read again: 🖼️
		{guildCacheFor, true, "🖼️", reactionNotLinked},    // a failed refresh keeps 🖼️
	}
	for i, st := range steps {
		w.pclock.Advance(st.advance)
		failing.fail.Store(st.fail)
		m := w.addImages(w.channel.ID, 1, "cat") // a message of its own: each step adds a reaction
		if e := w.react(m, bob, st.emoji, true); e.result != st.want {
			t.Errorf("step %d: %s: %q, want %q", i, st.emoji, e.result, st.want)
		}
	}
}

// TestServerCommandReactionsOff: with pin reactions turned off on the
// bot, /server says so beside the settings and when it changes them.
func TestServerCommandReactionsOff(t *testing.T) {
	w := newWorld(t, worldOptions{bot: func(c *Config) { c.NoReactions = true }})
	mod := w.addMemberWith(w.guild.ID, "mod", discord.PermissionManageGuild)
	for _, opt := range [][]string{nil, {"🖼️"}, {"reset"}} {
		if got := w.server(mod, opt...); !strings.Contains(got, msgServerReactionsOff) {
			t.Errorf("/server %v: %q, want it to say reactions are off", opt, got)
		}
	}
}
