package bot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
)

// handleSettings serves /settings: every account the user linked with its
// pin count in the window and default board, the active one marked, a menu to switch
// the active account and a menu to choose the active account's default
// board.
func (b *Bot) handleSettings(_ discord.SlashCommandInteractionData, e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	b.reply(inv.ctx, inv.token, b.settings(inv))
	return nil
}

func (b *Bot) settings(inv invocation) reply {
	ctx := inv.ctx
	userID := inv.userID.String()
	u, err := b.cfg.Links.User(ctx, userID)
	if err != nil {
		inv.log.Error().Err(err).Msg("reading the user's links failed")
		return reply{content: msgLinksUnavailable}
	}
	if len(u.Accounts) == 0 {
		return reply{content: msgNoAccount}
	}
	accts := make([]links.Account, len(u.Accounts))
	for i, id := range u.Accounts {
		a, err := b.cfg.Links.Account(ctx, id)
		if err != nil {
			inv.log.Error().Err(err).Str("account", id).Msg("reading an account failed")
		}
		if a.ID == "" {
			a.ID = id
		}
		accts[i] = a
	}
	sts, err := b.accountStatuses(ctx, u.Accounts)
	if err != nil {
		inv.log.Error().Err(err).Msg("reading pin counts failed")
	}

	var sb strings.Builder
	sb.WriteString("**Your Pinterest accounts**\n")
	var active *links.Account
	var activeSt actors.Status
	earlier := false // some count holds slots of an earlier rule
	for i, a := range accts {
		name := accountName(a.Username, a.ID)
		marker, suffix := "•", ""
		if a.ID == u.Active {
			marker, suffix = "▶", " (active)"
			active, activeSt = &accts[i], sts[i]
		}
		count := b.rule.pinsUnknown()
		if sts[i].Limit > 0 {
			count = b.rule.pinsLine(sts[i])
			earlier = earlier || sts[i].Blocked > 0
		}
		board := "none yet"
		if a.DefaultBoard != "" {
			board = "**" + plain(firstNonEmpty(a.DefaultBoardName, a.DefaultBoard)) + "**"
		}
		fmt.Fprintf(&sb, "%s %s%s — %s — default board: %s", marker, name, suffix, count, board)
		if a.RelinkNeeded {
			sb.WriteString(" — needs /link again")
		}
		if sts[i].Limit > 0 && held(sts[i]) {
			sb.WriteString(" — paused by Pinterest until " + timeText(nextFree(sts[i])))
		}
		sb.WriteString("\n")
	}
	if earlier {
		sb.WriteString(msgEarlierRule + "\n")
	}
	if active == nil {
		sb.WriteString("No account is active: pick one with the menu below.\n")
	} else if activeSt.Limit > 0 && full(activeSt) {
		fmt.Fprintf(&sb, "Your active account is at its limit; its next slot frees at %s. Switch to another account to keep pinning.\n", timeText(nextFree(activeSt)))
	}

	var comps []discord.LayoutComponent
	opts := make([]discord.StringSelectMenuOption, 0, min(len(accts), maxSelectOptions))
	for i, a := range accts {
		if i == maxSelectOptions {
			break
		}
		desc := b.rule.pinsUnknown()
		if sts[i].Limit > 0 {
			desc = b.rule.pinsLine(sts[i])
		}
		opts = append(opts, discord.StringSelectMenuOption{
			Label:       truncateRunes(accountLabel(a.Username, a.ID), 100),
			Value:       a.ID,
			Description: desc,
			Default:     a.ID == u.Active,
		})
	}
	comps = append(comps, discord.NewActionRow(discord.NewStringSelectMenu(idSwitch, "Switch the active account", opts...)))

	if active != nil {
		name := accountName(active.Username, active.ID)
		boards, why := b.boardsFor(inv, *active)
		switch {
		case why != "":
			sb.WriteString(why + "\n")
		case len(boards) == 0:
			fmt.Fprintf(&sb, "%s has no boards yet: create one on Pinterest first.\n", name)
		default:
			bopts := make([]discord.StringSelectMenuOption, 0, min(len(boards), maxSelectOptions))
			for i, bd := range boards {
				if i == maxSelectOptions {
					fmt.Fprintf(&sb, "The menu shows %s's first %d boards; /pin's board: option reaches all of them.\n", name, maxSelectOptions)
					break
				}
				bopts = append(bopts, discord.StringSelectMenuOption{
					Label:   truncateRunes(firstNonEmpty(bd.Name, bd.ID), 100),
					Value:   bd.ID,
					Default: bd.ID == active.DefaultBoard,
				})
			}
			placeholder := truncateRunes("Default board for "+firstNonEmpty(active.Username, active.ID), 150)
			comps = append(comps, discord.NewActionRow(discord.NewStringSelectMenu(idBoard+"/"+active.ID, placeholder, bopts...)))
		}
	}
	comps = append(comps, discord.NewActionRow(discord.NewStringSelectMenu(idWhenFull, "At the "+b.rule.adj+" limit, /pin…",
		discord.StringSelectMenuOption{Label: "At the limit: skip the rest", Value: whenFullSkip, Default: !u.QueueWhenFull,
			Description: "What does not fit is not pinned"},
		discord.StringSelectMenuOption{Label: "At the limit: queue the rest", Value: whenFullQueue, Default: u.QueueWhenFull,
			Description: "What does not fit is pinned when slots free"},
	)))
	return reply{content: strings.TrimRight(sb.String(), "\n"), components: comps}
}

// handleWhenFull serves the /settings menu of what /pin and "Pin to
// Pinterest" do at the limit when the command does not say.
func (b *Bot) handleWhenFull(e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	b.reply(inv.ctx, inv.token, b.whenFull(inv, e))
	return nil
}

func (b *Bot) whenFull(inv invocation, e *event) reply {
	v, ok := selected(e)
	if !ok || (v != whenFullSkip && v != whenFullQueue) {
		return reply{content: "Pick one choice from the menu."}
	}
	if err := b.cfg.Links.SetQueueWhenFull(inv.ctx, inv.userID.String(), v == whenFullQueue); err != nil {
		if errors.Is(err, links.ErrNotLinked) {
			return reply{content: msgNoAccount}
		}
		inv.log.Error().Err(err).Msg("saving the when-full choice failed")
		return reply{content: msgLinksUnavailable}
	}
	if v == whenFullQueue {
		return reply{content: "At the " + b.rule.adj + " limit, /pin and \"Pin to Pinterest\" now queue the rest: each picture is pinned when a slot frees, and the results come by direct message (or, if yours are closed, in the channel where you ran the command). /queue shows and cancels queued pins. /pin's when_full: option overrides this."}
	}
	return reply{content: "At the " + b.rule.adj + " limit, /pin and \"Pin to Pinterest\" now skip the rest. /pin's when_full: option overrides this."}
}

// boardsFor lists the account's boards for /settings; why, when set, says
// why they could not be listed.
func (b *Bot) boardsFor(inv invocation, a links.Account) ([]pinterest.Board, string) {
	name := accountName(a.Username, a.ID)
	if a.RelinkNeeded {
		return nil, fmt.Sprintf("%s needs /link again before Pinbot can list its boards.", name)
	}
	boards, sess, err := b.accountBoards(inv.ctx, a.ID)
	if err == nil {
		return boards, ""
	}
	var se *sessionError
	if errors.As(err, &se) {
		if errors.Is(err, links.ErrNoToken) || errors.Is(err, pinterest.ErrReauthRequired) {
			b.markRelink(inv.ctx, a.ID, sess)
			return nil, fmt.Sprintf("%s needs /link again before Pinbot can list its boards.", name)
		}
		inv.log.Error().Err(err).Str("account", a.ID).Msg("loading the account's token failed")
		return nil, "Pinbot could not load your boards right now."
	}
	return nil, "Boards: " + b.boardsTrouble(inv, a.ID, sess, name, err)
}

// selected returns the single value picked in a string select menu.
func selected(e *event) (string, bool) {
	d, ok := e.componentData().(discord.StringSelectMenuInteractionData)
	if !ok || len(d.Values) != 1 {
		return "", false
	}
	return d.Values[0], true
}

// handleSwitch serves the /settings account menu: the picked account
// becomes the active one, if the user linked it.
func (b *Bot) handleSwitch(e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	b.reply(inv.ctx, inv.token, b.switchAccount(inv, e))
	return nil
}

func (b *Bot) switchAccount(inv invocation, e *event) reply {
	id, ok := selected(e)
	if !ok {
		return reply{content: "Pick one account from the menu."}
	}
	userID := inv.userID.String()
	acct, _, ok := b.linkedAccount(inv.ctx, userID, id)
	if !ok {
		inv.log.Warn().Str("account", id).Msg("switch to an account the user has not linked refused")
		return reply{content: msgNotLinked}
	}
	if err := b.cfg.Links.SetActive(inv.ctx, userID, id); err != nil {
		if errors.Is(err, links.ErrNotLinked) {
			return reply{content: msgNotLinked}
		}
		inv.log.Error().Err(err).Str("account", id).Msg("switching the active account failed")
		return reply{content: msgLinksUnavailable}
	}
	name := accountName(acct.Username, acct.ID)
	var sb strings.Builder
	st, err := b.accountStatus(inv.ctx, id)
	if err != nil {
		inv.log.Error().Err(err).Str("account", id).Msg("reading the pin count failed")
		fmt.Fprintf(&sb, "Active account is now %s. %s.", name, b.rule.pinsUnknown())
	} else {
		fmt.Fprintf(&sb, "Active account is now %s. %s.", name, b.rule.pinsLine(st))
		if full(st) {
			fmt.Fprintf(&sb, " It is at its limit; its next slot frees at %s.", timeText(nextFree(st)))
		}
		sb.WriteString(changedNote(st))
	}
	if acct.RelinkNeeded {
		sb.WriteString(" It needs /link again before it can pin.")
	}
	if acct.DefaultBoard == "" {
		sb.WriteString(" Choose its default board in /settings.")
	}
	return reply{content: sb.String()}
}

// handleDefaultBoard serves the /settings board menu: the picked board
// becomes the account's default, if the user linked the account and the
// board is the account's.
func (b *Bot) handleDefaultBoard(e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	b.reply(inv.ctx, inv.token, b.defaultBoard(inv, e.account, e))
	return nil
}

func (b *Bot) defaultBoard(inv invocation, accountID string, e *event) reply {
	boardID, ok := selected(e)
	if !ok {
		return reply{content: "Pick one board from the menu."}
	}
	userID := inv.userID.String()
	acct, _, ok := b.linkedAccount(inv.ctx, userID, accountID)
	if !ok {
		inv.log.Warn().Str("account", accountID).Msg("board choice for an account the user has not linked refused")
		return reply{content: msgNotLinked}
	}
	name := accountName(acct.Username, acct.ID)
	boards, why := b.boardsFor(inv, acct)
	if why != "" {
		return reply{content: why}
	}
	var board pinterest.Board
	found := false
	for _, bd := range boards {
		if bd.ID == boardID {
			board, found = bd, true
			break
		}
	}
	if !found {
		return reply{content: fmt.Sprintf("That board is not one of %s's boards any more. Run /settings again.", name)}
	}
	if err := b.cfg.Links.SetDefaultBoard(inv.ctx, userID, acct.ID, board.ID, board.Name); err != nil {
		if errors.Is(err, links.ErrNotLinked) {
			return reply{content: msgNotLinked}
		}
		inv.log.Error().Err(err).Str("account", acct.ID).Msg("setting the default board failed")
		return reply{content: msgLinksUnavailable}
	}
	return reply{content: fmt.Sprintf("Default board for %s is now **%s**.", name, plain(firstNonEmpty(board.Name, board.ID)))}
}
