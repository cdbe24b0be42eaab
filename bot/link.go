package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/links"
)

// maxButtonURL is the longest URL a Discord link button takes.
const maxButtonURL = 512

// handleLink serves /link: an ephemeral message with Pinterest's
// authorization address, whose state is bound to the user, single use
// and short lived. The OAuth callback (bot/web) shows who the link is
// for, and stores it once the browser confirms.
func (b *Bot) handleLink(_ discord.SlashCommandInteractionData, e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	b.reply(inv.ctx, inv.token, b.link(inv))
	return nil
}

func (b *Bot) link(inv invocation) reply {
	userID := inv.userID.String()
	u, err := b.cfg.Links.User(inv.ctx, userID)
	if err != nil {
		inv.log.Error().Err(err).Msg("reading the user's links failed")
		return reply{content: msgLinksUnavailable}
	}
	if len(u.Accounts) >= links.MaxAccountsPerUser {
		return reply{content: msgMaxAccounts}
	}
	// The state keeps the interaction's token, so that the user is told
	// in this reply what became of the link.
	now := b.cfg.Now()
	state, err := b.cfg.Links.NewLinkState(inv.ctx, links.Request{User: userID, Interaction: inv.token, At: now}, now)
	if err != nil {
		inv.log.Error().Err(err).Msg("creating an OAuth state failed")
		return reply{content: msgLinksUnavailable}
	}
	u2 := b.cfg.Pinterest.AuthCodeURL(state)
	r := reply{content: fmt.Sprintf("Open this link to connect a Pinterest account to Pinbot:\n<%s>\n"+
		"It works once and expires in %d minutes. Do not share it: it links to your Discord account. "+
		"After you approve on Pinterest, check the page pinbot shows and confirm there. "+
		"Pins go to the account's board if it has only one; otherwise choose its default board in /settings (or name one with the board: option of /pin).",
		u2, int(links.DefaultStateTTL.Minutes()))}
	if len(u2) <= maxButtonURL {
		r.components = []discord.LayoutComponent{discord.NewActionRow(discord.NewLinkButton("Connect Pinterest", u2))}
	}
	inv.log.Info().Msg("link started")
	return r
}

// interactionTokenLife is how long Discord accepts an interaction's
// token, with which the bot edits its reply.
const interactionTokenLife = 15 * time.Minute

// noticeEditMargin is how long before its token expires the /link reply
// is no longer edited: the bot's clock may run a little behind Discord's,
// which started the token's life when the user ran /link. Later, and when
// the edit fails, the notice goes by DM.
const noticeEditMargin = time.Minute

// msgLinkedNotice tells the user who ran /link which account a link
// stored for them, and how to undo it: whoever opens a /link address can
// approve with their own Pinterest account.
func msgLinkedNotice(acct links.Account) string {
	which := acct.ID
	if acct.Username != "" {
		which = "@" + acct.Username
	}
	return "Linked Pinterest account " + accountName(acct.Username, acct.ID) +
		" to your Discord account; it is now your active account. If that was not you, run /unlink account:" + plain(which) +
		" now: until you do, your pins go to that account."
}

// msgScopesNotice tells the user who ran /link that Pinterest granted too
// little, naming the scopes missing.
func msgScopesNotice(missing []string) string {
	return "Nothing was linked: Pinterest did not give Pinbot every permission it needs (it lacks " + plain(strings.Join(missing, ", ")) + "). " +
		"Run /link to try again, and allow everything Pinterest asks for. If Pinterest did not ask for these, tell the bot's operator."
}

// Linked tells the Discord user who ran /link (req) that acct is now
// linked to them, and how to undo it. It is web.Config.OnLinked: it
// returns at once, and the notice goes on a goroutine of its own, which
// Close waits for.
func (b *Bot) Linked(req links.Request, acct links.Account) {
	log := b.log.With().Str("user_id", req.User).Str("account", acct.ID).Str("notice", "linked").Logger()
	b.notifyLink(req, msgLinkedNotice(acct), log)
}

// LinkRefused tells the Discord user who ran /link (req) that nothing was
// linked because Pinterest did not grant the scopes missing. It is
// web.Config.OnRefused, and returns at once as Linked does.
func (b *Bot) LinkRefused(req links.Request, missing []string) {
	log := b.log.With().Str("user_id", req.User).Strs("missing_scopes", missing).Str("notice", "scopes missing").Logger()
	b.notifyLink(req, msgScopesNotice(missing), log)
}

// notifyLink sends content to the user who ran /link: it edits the /link
// reply while its token lives, else (or when the edit fails) it sends a
// DM. A notice that cannot be delivered is logged, with why.
func (b *Bot) notifyLink(req links.Request, content string, log zerolog.Logger) {
	if req.Interaction == "" {
		// Not started by /link (the sandbox links its demo accounts so):
		// no one asked.
		log.Info().Msg("no link notice: the link was not started by /link")
		return
	}
	if !b.enter() {
		log.Error().Msg("link notice not sent: the bot is closing")
		return
	}
	go func() {
		defer b.leave()
		ctx, cancel := context.WithTimeout(b.workCtx, replyTimeout)
		defer cancel()
		if !req.At.IsZero() && b.cfg.Now().Before(req.At.Add(interactionTokenLife-noticeEditMargin)) {
			comps := []discord.LayoutComponent{}
			err := b.api.EditOriginal(ctx, req.Interaction, discord.MessageUpdate{
				Content:         &content,
				Components:      &comps,
				AllowedMentions: &noMentions,
			})
			if err == nil {
				log.Info().Str("via", "reply").Msg("link notice sent")
				return
			}
			log.Warn().Str("error", errText(err)).Msg("editing the /link reply failed; sending the link notice by DM")
		}
		err := b.sendDM(ctx, req.User, content)
		switch {
		case err == nil:
			log.Info().Str("via", "dm").Msg("link notice sent")
		case dmRefused(err):
			log.Warn().Str("error", errText(err)).Msg("link notice not delivered: the user accepts no direct message from Pinbot")
		default:
			log.Error().Str("error", errText(err)).Msg("link notice not delivered: sending the DM failed")
		}
	}()
}

// sendDM sends content to the Discord user userID in their DM channel
// with the bot.
func (b *Bot) sendDM(ctx context.Context, userID, content string) error {
	id, err := snowflake.Parse(userID)
	if err != nil {
		return fmt.Errorf("bot: user id %q: %w", userID, err)
	}
	ch, err := b.api.OpenDM(ctx, id)
	if err != nil {
		return err
	}
	if ch == 0 {
		return errors.New("bot: Discord answered no DM channel")
	}
	return b.api.Send(ctx, ch, discord.MessageCreate{Content: content, AllowedMentions: &noMentions})
}

// dmRefused reports whether err is Discord refusing a DM the user does not
// accept: closed DMs or a blocked bot (50007), no server in common
// (50278).
func dmRefused(err error) bool {
	return discordio.DMRefused(err)
}

// handleUnlink serves /unlink account:, which takes an account id (as the
// autocomplete offers) or username.
func (b *Bot) handleUnlink(data discord.SlashCommandInteractionData, e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	b.reply(inv.ctx, inv.token, b.unlink(inv, data.String(optAccount)))
	return nil
}

func (b *Bot) unlink(inv invocation, which string) reply {
	userID := inv.userID.String()
	u, err := b.cfg.Links.User(inv.ctx, userID)
	if err != nil {
		inv.log.Error().Err(err).Msg("reading the user's links failed")
		return reply{content: msgLinksUnavailable}
	}
	acct, ok := b.findLinked(inv, u, which)
	if !ok {
		return reply{content: msgNotLinked}
	}
	if err := b.cfg.Links.Unlink(inv.ctx, userID, acct.ID); err != nil {
		if errors.Is(err, links.ErrNotLinked) {
			return reply{content: msgNotLinked}
		}
		inv.log.Error().Err(err).Str("account", acct.ID).Msg("unlinking failed")
		return reply{content: msgLinksUnavailable}
	}
	inv.log.Info().Str("account", acct.ID).Msg("account unlinked")
	var sb strings.Builder
	fmt.Fprintf(&sb, "Unlinked %s. The pins it made in the last 12 hours still count toward its limit.", accountName(acct.Username, acct.ID))
	sb.WriteString(b.cancelOnUnlink(inv, acct.ID))
	after, err := b.cfg.Links.User(inv.ctx, userID)
	switch {
	case err != nil:
	case after.Active == "" || len(after.Accounts) == 0:
		sb.WriteString(" You have no linked account now; run /link to connect one.")
	default:
		if a, err := b.cfg.Links.Account(inv.ctx, after.Active); err == nil {
			fmt.Fprintf(&sb, " Your active account is %s.", accountName(a.Username, after.Active))
		}
	}
	return reply{content: sb.String()}
}

// findLinked finds which among the user's accounts: by id, or by
// username with or without its @.
func (b *Bot) findLinked(inv invocation, u links.User, which string) (links.Account, bool) {
	which = strings.TrimSpace(which)
	var byName *links.Account
	for _, id := range u.Accounts {
		a, err := b.cfg.Links.Account(inv.ctx, id)
		if err != nil {
			inv.log.Error().Err(err).Str("account", id).Msg("reading an account failed")
			a = links.Account{ID: id}
		}
		if a.ID == "" {
			a.ID = id
		}
		if id == which {
			return a, true
		}
		if byName == nil && a.Username != "" && strings.EqualFold(a.Username, strings.TrimPrefix(which, "@")) {
			byName = &a
		}
	}
	if byName != nil {
		return *byName, true
	}
	return links.Account{}, false
}

// autocompleteUnlink offers the user's linked accounts.
func (b *Bot) autocompleteUnlink(d discord.AutocompleteInteractionData, e *event) error {
	typed := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d.String(optAccount)), "@"))
	choices := []discord.AutocompleteChoice{}
	u, err := b.cfg.Links.User(e.Ctx, e.User().ID.String())
	if err == nil {
		for _, id := range u.Accounts {
			if len(choices) == maxSelectOptions {
				break
			}
			a, err := b.cfg.Links.Account(e.Ctx, id)
			if err != nil {
				continue
			}
			if typed != "" && !strings.Contains(strings.ToLower(a.Username), typed) && !strings.Contains(id, typed) {
				continue
			}
			label := id
			if a.Username != "" {
				label = "@" + a.Username + " (" + id + ")"
			}
			choices = append(choices, discord.AutocompleteChoiceString{Name: truncateRunes(label, 100), Value: id})
		}
	}
	return b.autocompleteResult(e, choices)
}

// cancelOnUnlink cancels the user's waiting pins on accountID, which they
// just unlinked, and says so. Canceled pins are deleted: linking the
// account again does not bring them back. A pin that cannot be canceled
// does not run either: a queued pin checks, when it runs, that its user
// still links its account.
func (b *Bot) cancelOnUnlink(inv invocation, accountID string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(inv.ctx), resolveTimeout)
	defer cancel()
	js, _, err := b.accountJobs(ctx, accountID)
	if err != nil {
		inv.log.Error().Err(err).Str("account", accountID).Msg("reading the account's queued pins failed")
		return " Any pins you queued with it will not run."
	}
	var ids []uint64
	for _, j := range js {
		if q, err := decodeQueuedPin(j.Payload); err == nil && j.State == actors.JobWaiting && q.User == inv.userID {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	canceled, _, err := b.cancelJobs(ctx, accountID, ids)
	if err != nil {
		inv.log.Error().Err(err).Str("account", accountID).Msg("canceling the account's queued pins failed")
		return " Its " + countText(len(ids), "queued pin", "queued pins") + " will not run."
	}
	if len(canceled) == 1 {
		return " Canceled the pin you had queued with it."
	}
	return fmt.Sprintf(" Canceled the %d pins you had queued with it.", len(canceled))
}
