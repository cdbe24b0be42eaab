package bot

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/omit"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// Server settings. A server's managers choose, with /server, what Pinbot
// does in their server for everyone in it: for now the emoji of pin
// reactions (pin_emoji), stored in the token store (links.Guilds) so that
// every cluster member and every restart sees it. The command is offered
// by default only to members with Manage Server (default_member_permissions),
// and checked again on use: a server may grant the command to others in
// its integration settings, and Pinbot still refuses them.
//
// Reactions come on the gateway's reading goroutine, which must not wait
// for the store: the servers' emojis are kept in memory (guildEmojis). A
// server's reactions are judged against what was read of its settings
// less than guildCacheFor ago; the first reaction of a server, and the
// first after that time, start one read of its settings on a goroutine
// of its own and are held, in order, with those that come meanwhile,
// until it ends. /server updates this member's memory at once; another
// cluster member sees the change within guildCacheFor.

// Limits of the servers' settings kept in memory.
const (
	// guildCacheFor is how long what was read of a server's settings
	// judges its reactions.
	guildCacheFor = time.Minute
	// guildRetryAfter is how long a server whose settings could not be
	// read is judged by what was read before (the bot's emoji if
	// nothing was) until the next read.
	guildRetryAfter = 5 * time.Second
	// guildReadTimeout bounds a read of a server's settings.
	guildReadTimeout = 5 * time.Second
	// maxGuildEntries bounds the servers remembered; beyond it, those
	// not being read are forgotten.
	maxGuildEntries = 50_000
	// maxGuildWaiting bounds the reactions of one server held while its
	// settings are read; a reaction beyond it is dropped, as busy.
	maxGuildWaiting = 256
)

// Option names of /server.
const (
	cmdServer   = "server"
	optPinEmoji = "pin_emoji"
	// pinEmojiReset is the pin_emoji value that goes back to the bot's
	// emoji.
	pinEmojiReset = "reset"
)

// serverManager are the permissions that may change a server's
// settings: Manage Server, or Administrator, which implies every other.
const serverManager = discord.PermissionManageGuild | discord.PermissionAdministrator

// serverCommand is /server's definition: guild only, and offered by
// default only to those with Manage Server.
func serverCommand() discord.ApplicationCommandCreate {
	perms := discord.PermissionManageGuild
	maxLen := 100
	return discord.SlashCommandCreate{
		Name:                     cmdServer,
		Description:              "Pinbot's settings for this server (Manage Server): the pin reaction's emoji",
		IntegrationTypes:         []discord.ApplicationIntegrationType{discord.ApplicationIntegrationTypeGuildInstall},
		Contexts:                 []discord.InteractionContextType{discord.InteractionContextTypeGuild},
		DefaultMemberPermissions: omit.NewPtr(perms),
		Options: []discord.ApplicationCommandOption{
			discord.ApplicationCommandOptionString{
				Name:        optPinEmoji,
				Description: "The emoji that pins a message's pictures here, such as 🖼️ or a server emoji; reset: the default",
				MaxLength:   &maxLen,
			},
		},
	}
}

// handleServer serves /server: without an option it shows the server's
// settings; pin_emoji sets the emoji of the server's pin reactions, or
// with "reset" goes back to the bot's.
func (b *Bot) handleServer(data discord.SlashCommandInteractionData, e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	raw, set := data.OptString(optPinEmoji)
	b.reply(inv.ctx, inv.token, b.server(inv, raw, set))
	return nil
}

// server is /server's answer; set says whether pin_emoji was given.
func (b *Bot) server(inv invocation, raw string, set bool) reply {
	if inv.guildID == 0 {
		return reply{content: msgGuildOnly}
	}
	if inv.perms&serverManager == 0 {
		inv.log.Info().Msg("/server refused: the member may not manage the server")
		return reply{content: msgServerNotManager}
	}
	guild := inv.guildID.String()
	if !set {
		gs, err := b.cfg.Links.GuildSettings(inv.ctx, guild)
		if err != nil {
			inv.log.Error().Err(err).Msg("reading the server's settings failed")
			return reply{content: msgServerUnavailable}
		}
		emoji, custom := b.pinEmoji(), false
		if gs.PinEmoji != "" {
			if e, err := parsePinEmoji(gs.PinEmoji); err == nil {
				emoji, custom = e, true
			}
		}
		return reply{content: msgServerSettings(emoji.text(), custom, b.pinEmoji().text(), b.cfg.NoReactions)}
	}

	var emoji pinEmoji
	reset := strings.EqualFold(strings.TrimSpace(raw), pinEmojiReset)
	if !reset {
		// parsePinEmoji reads a blank emoji as the bot's; here it is a
		// mistake.
		e, err := parsePinEmoji(raw)
		if err != nil || strings.TrimSpace(raw) == "" {
			inv.log.Info().Msg("/server refused a pin emoji that is not one")
			return reply{content: msgServerBadEmoji(raw)}
		}
		emoji = e
	}
	if err := b.cfg.Links.SetPinEmoji(inv.ctx, guild, emoji.String()); err != nil {
		inv.log.Error().Err(err).Msg("storing the server's pin emoji failed")
		return reply{content: msgServerUnavailable}
	}
	if reset {
		emoji = b.pinEmoji()
	}
	b.reactions.guilds.put(inv.guildID, emoji, b.cfg.Now())
	inv.log.Info().Str("pin_emoji", emoji.String()).Bool("reset", reset).Msg("the server's pin emoji changed")
	if reset {
		return reply{content: msgServerPinEmojiReset(emoji.text(), b.cfg.NoReactions)}
	}
	return reply{content: msgServerPinEmojiSet(emoji.text(), b.cfg.NoReactions)}
}

// guildEmojis are the servers' pin emojis as last read, for the gateway's
// reading goroutine (see above). Its zero value is ready; it is safe for
// simultaneous use.
type guildEmojis struct {
	mu      sync.Mutex
	entries map[snowflake.ID]*guildEntry
}

// guildEntry is what is known of one server's pin emoji.
type guildEntry struct {
	emoji pinEmoji
	known bool      // emoji was read (or set) at least once
	until time.Time // when emoji stops judging the server's reactions
	// reading is set while a read of the server's settings runs; waiting
	// are the reactions it holds, in order.
	reading bool
	waiting []discordio.Reaction
	// gen counts the changes by /server, so that a read begun before one
	// does not undo it.
	gen uint64
}

// judgeReaction files r (fileReaction) with the pin emoji of its server
// if what was read of it is recent, and otherwise holds it until a read
// of the server's settings, started here if none runs, ends. It never
// waits for the store.
func (b *Bot) judgeReaction(r discordio.Reaction) {
	g := &b.reactions.guilds
	now := b.cfg.Now()
	g.mu.Lock()
	e := g.entries[r.GuildID]
	if e != nil && e.known && !e.reading && now.Before(e.until) {
		emoji := e.emoji
		g.mu.Unlock()
		b.fileReaction(r, emoji)
		return
	}
	if e != nil && e.reading {
		if len(e.waiting) >= maxGuildWaiting {
			g.mu.Unlock()
			b.log.Warn().Str("guild_id", r.GuildID.String()).Msg("reaction dropped: too many held while the server's settings are read")
			b.reactionDone(r, reactionBusy)
			return
		}
		e.waiting = append(e.waiting, r)
		g.mu.Unlock()
		return
	}
	if !b.enter() {
		g.mu.Unlock()
		b.reactionDone(r, reactionClosing)
		return
	}
	if e == nil {
		g.makeRoomLocked(now)
		e = &guildEntry{}
		g.entries[r.GuildID] = e
	}
	e.reading, e.waiting = true, []discordio.Reaction{r}
	gen := e.gen
	g.mu.Unlock()
	go b.readGuild(r.GuildID, gen)
}

// readGuild reads the settings of guild, then files the reactions held
// meanwhile, in order, with the emoji read. A read that fails judges them
// by what was read before (the bot's emoji if nothing was), and the next
// reaction after guildRetryAfter reads again.
func (b *Bot) readGuild(guild snowflake.ID, gen uint64) {
	defer b.leave()
	ctx, cancel := context.WithTimeout(b.workCtx, guildReadTimeout)
	gs, err := b.cfg.Links.GuildSettings(ctx, guild.String())
	cancel()
	emoji, ok := b.pinEmoji(), err == nil
	if err != nil {
		b.log.Warn().Err(err).Str("guild_id", guild.String()).Msg("reading the server's settings failed; its reactions are judged by the emoji read before")
	} else if gs.PinEmoji != "" {
		e, perr := parsePinEmoji(gs.PinEmoji)
		if perr != nil {
			b.log.Error().Err(perr).Str("guild_id", guild.String()).Msg("the server's stored pin emoji is not one; the bot's is used")
		} else {
			emoji = e
		}
	}
	now := b.cfg.Now()
	g := &b.reactions.guilds
	// The held reactions are filed under g.mu, so that a reaction that
	// comes meanwhile is filed after them.
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.entries[guild]
	if e == nil {
		// Not expected: an entry being read is never forgotten.
		g.makeRoomLocked(now)
		e = &guildEntry{gen: gen}
		g.entries[guild] = e
	}
	switch {
	case e.gen != gen:
		// /server changed the emoji during the read: it holds.
	case ok:
		e.emoji, e.known, e.until = emoji, true, now.Add(guildCacheFor)
	default:
		if !e.known {
			e.emoji, e.known = emoji, true
		}
		e.until = now.Add(guildRetryAfter)
	}
	waiting := e.waiting
	e.reading, e.waiting = false, nil
	for _, r := range waiting {
		b.fileReaction(r, e.emoji)
	}
}

// put records the pin emoji of guild that /server just stored.
func (g *guildEmojis) put(guild snowflake.ID, emoji pinEmoji, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.entries[guild]
	if e == nil {
		g.makeRoomLocked(now)
		e = &guildEntry{}
		g.entries[guild] = e
	}
	e.emoji, e.known, e.until = emoji, true, now.Add(guildCacheFor)
	e.gen++
}

// emojiOf returns the pin emoji last read for guild, or def when none
// was: for the texts of a reaction already judged.
func (g *guildEmojis) emojiOf(guild snowflake.ID, def pinEmoji) pinEmoji {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.entries[guild]; e != nil && e.known {
		return e.emoji
	}
	return def
}

// makeRoomLocked makes room for one more entry: when maxGuildEntries are
// remembered, it forgets those out of date, then, if that is not enough,
// others not being read. g.mu is held.
func (g *guildEmojis) makeRoomLocked(now time.Time) {
	if g.entries == nil {
		g.entries = make(map[snowflake.ID]*guildEntry)
	}
	if len(g.entries) < maxGuildEntries {
		return
	}
	for id, e := range g.entries {
		if !e.reading && !now.Before(e.until) {
			delete(g.entries, id)
		}
	}
	for id, e := range g.entries {
		if len(g.entries) < maxGuildEntries {
			return
		}
		if !e.reading {
			delete(g.entries, id)
		}
	}
}
