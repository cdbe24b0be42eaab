package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/handler"
	"github.com/disgoorg/disgo/rest"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
)

// maxButtonURL is the longest URL a Discord link button takes.
const maxButtonURL = 512

// handleLink serves /link: an ephemeral message with Pinterest's
// authorization address, whose state is bound to the user, single use
// and short lived. The OAuth callback (bot/web) shows who the link is
// for, and stores it once the browser confirms.
func (b *Bot) handleLink(_ discord.SlashCommandInteractionData, e *handler.CommandEvent) error {
	inv := b.invocation(e.Ctx, e.ApplicationCommandInteraction)
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
	state, err := b.cfg.Links.NewState(inv.ctx, userID, b.cfg.Now())
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

// handleUnlink serves /unlink account:, which takes an account id (as the
// autocomplete offers) or username.
func (b *Bot) handleUnlink(data discord.SlashCommandInteractionData, e *handler.CommandEvent) error {
	inv := b.invocation(e.Ctx, e.ApplicationCommandInteraction)
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
func (b *Bot) autocompleteUnlink(e *handler.AutocompleteEvent) error {
	typed := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(e.Data.String(optAccount)), "@"))
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
	actx, cancel := b.answerContext(e.Ctx)
	defer cancel()
	return e.AutocompleteResult(choices, rest.WithCtx(actx))
}

// cancelOnUnlink cancels the user's waiting pins on accountID, which they
// just unlinked, and says so. Canceled pins are deleted: linking the
// account again does not bring them back. A pin that cannot be canceled
// does not run either: a queued pin checks, when it runs, that its user
// still links its account.
func (b *Bot) cancelOnUnlink(inv invocation, accountID string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(inv.ctx), resolveTimeout)
	defer cancel()
	js, _, err := b.cfg.Engine.Jobs(ctx, accountID)
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
	canceled, _, err := b.cfg.Engine.Cancel(ctx, accountID, ids)
	if err != nil {
		inv.log.Error().Err(err).Str("account", accountID).Msg("canceling the account's queued pins failed")
		return fmt.Sprintf(" Its %d queued pins will not run.", len(ids))
	}
	if len(canceled) == 1 {
		return " Canceled the pin you had queued with it."
	}
	return fmt.Sprintf(" Canceled the %d pins you had queued with it.", len(canceled))
}
