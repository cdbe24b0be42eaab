package bot

import (
	"github.com/pinbot/pinbot/internal/logctx"

	"context"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// noMentions is the allowed_mentions of every message the bot sends: the
// bot never pings anyone, whatever the text holds.
var noMentions = discord.AllowedMentions{
	Parse: []discord.AllowedMentionType{},
	Roles: []snowflake.ID{},
	Users: []snowflake.ID{},
}

// replyTimeout bounds sending the final reply and its followups.
const replyTimeout = 30 * time.Second

// reply is what an interaction's deferred response becomes.
type reply struct {
	content    string
	components []discord.LayoutComponent
}

// maxMessageRunes is Discord's limit on a message's content.
const maxMessageRunes = 2000

// maxSelectOptions is the most options a Discord select menu holds.
const maxSelectOptions = 25

// reply edits the deferred response into r; content beyond Discord's 2000
// characters goes into ephemeral followups, with the components on the
// last message. Failures are logged: there is no one left to tell. cmd is
// the command's context: the reply is sent even when it has ended, and
// carries its log IDs.
func (b *Bot) reply(cmd context.Context, token string, r reply) {
	ctx, cancel := context.WithTimeout(logctx.Inherit(b.workCtx, cmd), replyTimeout)
	defer cancel()
	chunks := splitMessage(r.content, maxMessageRunes)
	for i, c := range chunks {
		var comps *[]discord.LayoutComponent
		if i == len(chunks)-1 {
			cs := r.components
			if cs == nil {
				cs = []discord.LayoutComponent{}
			}
			comps = &cs
		}
		var err error
		if i == 0 {
			err = b.api.EditOriginal(ctx, token, discord.MessageUpdate{
				Content:         &c,
				Components:      comps,
				AllowedMentions: &noMentions,
			})
		} else {
			mc := discord.MessageCreate{Content: c, Flags: discord.MessageFlagEphemeral, AllowedMentions: &noMentions}
			if comps != nil {
				mc.Components = *comps
			}
			err = b.api.Followup(ctx, token, mc)
		}
		if err != nil {
			b.logger(cmd).Warn().Str("error", errText(err)).Int("part", i+1).Msg("reply not delivered")
			return
		}
	}
}
