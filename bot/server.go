package bot

import (
	"context"
	"strings"
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
// for the store: the servers' emojis are kept in memory (guildEmojis, a
// guildCache: server_cache.go). A
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
// reading goroutine (see above).
type guildEmojis = guildCache[pinEmoji, discordio.Reaction]

// judgeReaction files r (fileReaction) with the pin emoji of its server
// if what was read of it is recent, and otherwise holds it until a read
// of the server's settings, started here if none runs, ends. It never
// waits for the store.
func (b *Bot) judgeReaction(r discordio.Reaction) {
	judgeGuild[pinEmoji, discordio.Reaction](b, &b.reactions.guilds, r.GuildID, r, reactionEvents{b})
}

// reactionEvents judges reactions by their server's pin emoji.
type reactionEvents struct{ b *Bot }

func (reactionEvents) what() string { return "settings" }

func (k reactionEvents) judge(emoji pinEmoji, r discordio.Reaction) { k.b.fileReaction(r, emoji) }

func (k reactionEvents) refuse(r discordio.Reaction, busy bool) {
	if busy {
		k.b.reactionDone(r, reactionBusy)
	} else {
		k.b.reactionDone(r, reactionClosing)
	}
}

// read reads the pin emoji of guild: the bot's when the server chose
// none, or when it cannot be read (with the error).
func (k reactionEvents) read(ctx context.Context, guild snowflake.ID) (pinEmoji, error) {
	b := k.b
	gs, err := b.cfg.Links.GuildSettings(ctx, guild.String())
	if err != nil {
		return b.pinEmoji(), err
	}
	if gs.PinEmoji == "" {
		return b.pinEmoji(), nil
	}
	e, err := parsePinEmoji(gs.PinEmoji)
	if err != nil {
		b.log.Error().Err(err).Str("guild_id", guild.String()).Msg("the server's stored pin emoji is not one; the bot's is used")
		return b.pinEmoji(), nil
	}
	return e, nil
}

// emojiOf returns the pin emoji last read for guild, or the bot's when
// none was: for the texts of a reaction already judged.
func (b *Bot) emojiOf(guild snowflake.ID) pinEmoji {
	if e, ok := b.reactions.guilds.value(guild); ok {
		return e
	}
	return b.pinEmoji()
}
