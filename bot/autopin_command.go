package bot

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/links"
)

// /autopin sets the server's channels that pin themselves (autopin.go).
// add links a channel to the caller's active account and a board of it:
// it needs the caller's consent (the account is theirs: they run it) and
// the Manage Channels permission in that channel, checked on use in the
// permissions Discord resolved for the caller in the channel (a server
// may grant the command to anyone). pause, resume and remove are for the
// rule's owner or a member with Manage Channels there. list shows the
// server's rules to anyone. A server has at most links.MaxAutopinRules.

// Names of /autopin and its options.
const (
	cmdAutopin     = "autopin"
	subAutopinAdd  = "add"
	subAutopinList = "list"
	subAutopinStop = "pause"
	subAutopinGo   = "resume"
	subAutopinDrop = "remove"
	optChannel     = "channel"
)

// channelManager are the permissions that may set a channel's auto-pin:
// Manage Channels, or Administrator, which implies every other.
const channelManager = discord.PermissionManageChannels | discord.PermissionAdministrator

// autopinChannelTypes are the channels that may pin themselves.
var autopinChannelTypes = []discord.ChannelType{discord.ChannelTypeGuildText, discord.ChannelTypeGuildNews}

// autopinCommand is /autopin's definition: guild only; anyone may list,
// and each subcommand checks its permission on use.
func autopinCommand() discord.ApplicationCommandCreate {
	channel := func(desc string) discord.ApplicationCommandOption {
		return discord.ApplicationCommandOptionChannel{Name: optChannel, Description: desc, Required: true, ChannelTypes: autopinChannelTypes}
	}
	return discord.SlashCommandCreate{
		Name:             cmdAutopin,
		Description:      "Channels whose pictures are queued for a Pinterest board as they are posted",
		IntegrationTypes: []discord.ApplicationIntegrationType{discord.ApplicationIntegrationTypeGuildInstall},
		Contexts:         []discord.InteractionContextType{discord.InteractionContextTypeGuild},
		Options: []discord.ApplicationCommandOption{
			discord.ApplicationCommandOptionSubCommand{
				Name:        subAutopinAdd,
				Description: "Queue the pictures posted in a channel for your active account (Manage Channels there)",
				Options: []discord.ApplicationCommandOption{
					channel("The channel whose pictures are queued"),
					discord.ApplicationCommandOptionString{
						Name: optBoard, Description: "The board of your active account they go to", Required: true, Autocomplete: true,
					},
				},
			},
			discord.ApplicationCommandOptionSubCommand{Name: subAutopinList, Description: "This server's auto-pin channels"},
			discord.ApplicationCommandOptionSubCommand{
				Name: subAutopinStop, Description: "Stop queueing a channel's pictures for now",
				Options: []discord.ApplicationCommandOption{channel("The auto-pin channel to pause")},
			},
			discord.ApplicationCommandOptionSubCommand{
				Name: subAutopinGo, Description: "Queue a paused channel's pictures again",
				Options: []discord.ApplicationCommandOption{channel("The auto-pin channel to resume")},
			},
			discord.ApplicationCommandOptionSubCommand{
				Name: subAutopinDrop, Description: "Stop a channel pinning itself",
				Options: []discord.ApplicationCommandOption{channel("The auto-pin channel to remove")},
			},
		},
	}
}

// handleAutopin serves /autopin.
func (b *Bot) handleAutopin(data discord.SlashCommandInteractionData, e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	sub := ""
	if data.SubCommandName != nil {
		sub = *data.SubCommandName
	}
	ch, _ := data.OptChannel(optChannel)
	b.reply(inv.ctx, inv.token, b.autopinCommand(inv, sub, ch, data.String(optBoard)))
	return nil
}

// Errors of the rules' updates that are answers to the user.
var (
	errAutopinExists  = errors.New("autopin: the channel has a rule")
	errAutopinFull    = errors.New("autopin: the server has the most rules")
	errAutopinUnknown = errors.New("autopin: the channel has no rule")
	errAutopinAllowed = errors.New("autopin: not the owner, nor a channel manager")
)

// autopinCommand is /autopin's answer: sub is the subcommand, ch the
// channel option as Discord resolved it (with the caller's permissions in
// it), board the board option.
func (b *Bot) autopinCommand(inv invocation, sub string, ch discord.ResolvedChannel, board string) reply {
	if inv.guildID == 0 {
		return reply{content: msgGuildOnly}
	}
	if sub == subAutopinList {
		return b.autopinList(inv)
	}
	if ch.ID == 0 {
		return reply{content: msgAutopinNotText}
	}
	if !slices.Contains(autopinChannelTypes, ch.Type) {
		inv.log.Info().Str("channel_id", ch.ID.String()).Msg("/autopin refused: not a text channel")
		return reply{content: msgAutopinNotText}
	}
	manager := ch.Permissions&channelManager != 0
	if sub == subAutopinAdd {
		return b.autopinAdd(inv, ch, manager, board)
	}
	if sub == subAutopinGo {
		if r, ok := b.resumeRefused(inv, ch.ID, manager); ok {
			return r
		}
	}
	var already bool
	var owner string
	rules, err := b.updateAutopin(inv, func(rs []links.AutopinRule) ([]links.AutopinRule, error) {
		i := slices.IndexFunc(rs, func(r links.AutopinRule) bool { return r.Channel == ch.ID.String() })
		if i < 0 {
			return nil, errAutopinUnknown
		}
		owner = rs[i].Owner
		if rs[i].Owner != inv.userID.String() && !manager {
			return nil, errAutopinAllowed
		}
		switch sub {
		case subAutopinStop, subAutopinGo:
			paused := sub == subAutopinStop
			already = rs[i].Paused == paused
			rs[i].Paused = paused
		case subAutopinDrop:
			rs = slices.Delete(rs, i, i+1)
		}
		return rs, nil
	})
	switch {
	case errors.Is(err, errAutopinUnknown):
		return reply{content: msgAutopinUnknown(ch.ID)}
	case errors.Is(err, errAutopinAllowed):
		inv.log.Info().Str("channel_id", ch.ID.String()).Str("owner", owner).Msg("/autopin refused: neither the rule's owner nor a channel manager")
		return reply{content: msgAutopinNotAllowed}
	case err != nil:
		return reply{content: msgAutopinUnavailable}
	}
	b.autopin.putRules(inv.guildID, rules, b.cfg.Now())
	if sub == subAutopinGo {
		// Access was just checked: what was found before, maybe the
		// loss that paused the channel, is out of date.
		b.autopin.forgetAccess(ch.ID)
	}
	inv.log.Info().Str("channel_id", ch.ID.String()).Str("change", sub).Msg("an auto-pin rule changed")
	switch sub {
	case subAutopinStop:
		return reply{content: msgAutopinPaused(ch.ID, already)}
	case subAutopinGo:
		return reply{content: msgAutopinResumed(ch.ID, already)}
	}
	return reply{content: msgAutopinRemoved(ch.ID)}
}

// resumeRefused checks, before /autopin resume of channel, that the
// rule's owner and Pinbot may read it: a channel that paused itself
// (autopin_events.go) stays paused until both may. It answers when the
// resume is refused; a rule that is unknown, not paused or not the
// caller's to change is left to the update's answers.
func (b *Bot) resumeRefused(inv invocation, channel snowflake.ID, manager bool) (reply, bool) {
	rules, err := b.cfg.Links.AutopinRules(inv.ctx, inv.guildID.String())
	if err != nil {
		inv.log.Error().Err(err).Msg("reading the server's auto-pin rules failed")
		return reply{content: msgAutopinUnavailable}, true
	}
	i := slices.IndexFunc(rules, func(r links.AutopinRule) bool { return r.Channel == channel.String() })
	if i < 0 || !rules[i].Paused || (rules[i].Owner != inv.userID.String() && !manager) {
		return reply{}, false
	}
	owner, err := snowflake.Parse(rules[i].Owner)
	if err != nil {
		return reply{}, false
	}
	ok, botLost, err := b.autopinReadable(inv.ctx, inv.guildID, channel, owner)
	switch {
	case err != nil:
		inv.log.Warn().Str("error", errText(err)).Str("channel_id", channel.String()).Msg("/autopin resume: the channel's permissions could not be checked")
		return reply{content: msgAutopinUnavailable}, true
	case ok:
		return reply{}, false
	case botLost:
		inv.log.Info().Str("channel_id", channel.String()).Msg("/autopin resume refused: Pinbot may not read the channel")
		return reply{content: msgAutopinResumeRefused(channel, "Pinbot cannot view it or read its history")}, true
	}
	inv.log.Info().Str("channel_id", channel.String()).Str("owner", owner.String()).Msg("/autopin resume refused: the rule's owner may not read the channel")
	return reply{content: msgAutopinResumeRefused(channel, fmt.Sprintf("<@%s>, whose account it pins to, cannot view it or read its history", owner))}, true
}

// updateAutopin updates the server's rules with fn and returns them as
// stored. An error of the store is logged.
func (b *Bot) updateAutopin(inv invocation, fn func([]links.AutopinRule) ([]links.AutopinRule, error)) ([]links.AutopinRule, error) {
	var after []links.AutopinRule
	err := b.cfg.Links.UpdateAutopinRules(inv.ctx, inv.guildID.String(), func(rs []links.AutopinRule) ([]links.AutopinRule, error) {
		out, err := fn(rs)
		after = out
		return out, err
	})
	if err != nil && !errors.Is(err, errAutopinExists) && !errors.Is(err, errAutopinFull) &&
		!errors.Is(err, errAutopinUnknown) && !errors.Is(err, errAutopinAllowed) {
		inv.log.Error().Err(err).Msg("updating the server's auto-pin rules failed")
	}
	return after, err
}

// autopinAdd links ch to the caller's active account and board.
func (b *Bot) autopinAdd(inv invocation, ch discord.ResolvedChannel, manager bool, board string) reply {
	if !manager {
		inv.log.Info().Str("channel_id", ch.ID.String()).Msg("/autopin add refused: the member may not manage the channel")
		return reply{content: msgAutopinNotManager}
	}
	acct, refusal := b.activeAccount(inv.ctx, inv.userID.String())
	if refusal != "" {
		return reply{content: refusal}
	}
	name := accountName(acct.Username, acct.ID)
	if acct.RelinkNeeded {
		return reply{content: msgRelink(name)}
	}
	boards, sess, err := b.accountBoards(inv.ctx, acct.ID)
	if err != nil {
		var se *sessionError
		if errors.As(err, &se) {
			return reply{content: msgRelink(name)}
		}
		return reply{content: b.boardsTrouble(inv, acct.ID, sess, name, err)}
	}
	bd, ok := findBoard(boards, board)
	if !ok || strings.TrimSpace(board) == "" {
		return reply{content: msgUnknownBoard(board, name)}
	}
	boardName := truncateRunes(firstNonEmpty(bd.Name, bd.ID), 100)
	var existing links.AutopinRule
	rule := links.AutopinRule{Channel: ch.ID.String(), Owner: inv.userID.String(), Account: acct.ID, Board: bd.ID, BoardName: boardName}
	rules, err := b.updateAutopin(inv, func(rs []links.AutopinRule) ([]links.AutopinRule, error) {
		if i := slices.IndexFunc(rs, func(r links.AutopinRule) bool { return r.Channel == rule.Channel }); i >= 0 {
			existing = rs[i]
			return nil, errAutopinExists
		}
		if len(rs) >= links.MaxAutopinRules {
			return nil, errAutopinFull
		}
		return append(rs, rule), nil
	})
	switch {
	case errors.Is(err, errAutopinExists):
		owner, _ := snowflake.Parse(existing.Owner)
		return reply{content: msgAutopinExists(ch.ID, owner)}
	case errors.Is(err, errAutopinFull):
		return reply{content: msgAutopinFull(links.MaxAutopinRules)}
	case err != nil:
		return reply{content: msgAutopinUnavailable}
	}
	b.autopin.putRules(inv.guildID, rules, b.cfg.Now())
	inv.log.Info().Str("channel_id", ch.ID.String()).Str("account", acct.ID).Str("board", bd.ID).Msg("a channel pins itself")
	return reply{content: msgAutopinAdded(ch.ID, name, boardName, b.cfg.NoAutopin)}
}

// autopinList lists the server's rules: the channel, the account and
// board, who set it, and whether it is paused.
func (b *Bot) autopinList(inv invocation) reply {
	rules, err := b.cfg.Links.AutopinRules(inv.ctx, inv.guildID.String())
	if err != nil {
		inv.log.Error().Err(err).Msg("reading the server's auto-pin rules failed")
		return reply{content: msgAutopinUnavailable}
	}
	b.autopin.putRules(inv.guildID, rules, b.cfg.Now())
	if len(rules) == 0 {
		s := msgAutopinNone
		if b.cfg.NoAutopin {
			s += "\n" + msgAutopinOff
		}
		return reply{content: s}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Auto-pin channels of this server (%d of at most %d):", len(rules), links.MaxAutopinRules)
	for _, r := range rules {
		name := accountName("", r.Account)
		if a, err := b.cfg.Links.Account(inv.ctx, r.Account); err == nil {
			name = accountName(a.Username, r.Account)
		}
		state := ""
		if r.Paused {
			state = " · paused"
		}
		fmt.Fprintf(&sb, "\n• <#%s> → %s, board %s · set by <@%s>%s", r.Channel, name, quoteInput(firstNonEmpty(r.BoardName, r.Board)), r.Owner, state)
	}
	if b.cfg.NoAutopin {
		sb.WriteString("\n" + msgAutopinOff)
	}
	return reply{content: truncateRunes(sb.String(), 2000)}
}
