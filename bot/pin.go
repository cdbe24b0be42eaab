package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/internal/logctx"
)

// MaxPinsPerBatch is the most pins one /pin or "Pin to Pinterest" makes.
// Every picture of a referenced message (each image attachment and each
// image embed) is one pin and takes one of the account's 100 slots; a
// command names at most MaxMessagesPerPin messages and pins at most
// MaxPinsPerBatch pictures in all, in the order given. Pictures beyond
// that are reported as skipped: one command stays bounded in time and in
// Pinterest calls, whatever the messages hold.
const MaxPinsPerBatch = 10

// handlePin serves /pin.
func (b *Bot) handlePin(data discord.SlashCommandInteractionData, e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	b.reply(inv.ctx, inv.token, b.pinCommand(inv, data.String(optMessages), data.String(optBoard), data.Bool(optAgain), data.String(optWhenFull)))
	return nil
}

// pinCommand parses /pin's options and runs the batch.
func (b *Bot) pinCommand(inv invocation, messages, board string, again bool, whenFull ...string) reply {
	if inv.guildID == 0 || inv.channelID == 0 {
		return reply{content: msgGuildOnly}
	}
	refs, err := parseMessageRefs(messages, inv.guildID, inv.channelID)
	if err != nil {
		return reply{content: err.Error()}
	}
	bt := batch{source: sourceCommand, refs: refs, board: board, again: again}
	if len(whenFull) > 0 {
		bt.whenFull = whenFull[0]
		switch whenFull[0] {
		case "", whenFullSkip, whenFullQueue:
		default:
			return reply{content: fmt.Sprintf("`%s` is not a choice of when_full: use `%s` or `%s`.", quoteInput(whenFull[0]), whenFullSkip, whenFullQueue)}
		}
	}
	return b.runBatch(inv, bt)
}

// handlePinMessage serves the "Pin to Pinterest" message command. Discord
// hands over the target message, content and attachments included, so it
// works without the message content intent; the user ran it on a message
// they are looking at, in the channel it is in.
func (b *Bot) handlePinMessage(data discord.MessageCommandInteractionData, e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	if inv.guildID == 0 {
		b.reply(inv.ctx, inv.token, reply{content: msgGuildOnly})
		return nil
	}
	msg := data.TargetMessage()
	if msg.ID == 0 {
		msg.ID = data.TargetID()
	}
	if msg.ChannelID == 0 {
		msg.ChannelID = inv.channelID
	}
	ref := messageRef{GuildID: inv.guildID, ChannelID: msg.ChannelID, MessageID: msg.ID, Raw: msg.ID.String()}
	b.reply(inv.ctx, inv.token, b.runBatch(inv, batch{source: sourceMessageCommand, refs: []messageRef{ref}, target: &msg}))
	return nil
}

// batch is one command's pins to make.
type batch struct {
	// source is what asked for it, for the metrics (see pinSources).
	source string
	refs   []messageRef
	board  string // the board option, "" for the account's default
	// target is the message of a message command; nil for /pin, whose
	// messages are fetched fresh (attachment URLs are signed and expire).
	target *discord.Message
	// whenFull says what to do with the pictures the limit refuses:
	// whenFullQueue or whenFullSkip; "" for the user's default (/settings).
	whenFull string
	// again pins the pictures pinned to the board before all the same.
	again bool
	// boardID, when set, is the board to pin to (an auto-pin rule's),
	// named boardName, taken as it is: board is then unused.
	boardID, boardName string
	// queueAll queues every picture, each with its start time, none
	// pinned at once (auto-pin channels).
	queueAll bool
	// skip are pictures (their keys) left out of the batch and of its
	// report: those of an edited message already queued or pinned.
	skip []string
}

// runBatch finds the user's active account and runs the batch on it
// (pinFor), here or, in a cluster, on the member that owns the account.
func (b *Bot) runBatch(inv invocation, bt batch) reply {
	ctx := inv.ctx
	acct, refusal := b.activeAccount(ctx, inv.userID.String())
	if refusal != "" {
		return reply{content: refusal}
	}
	if acct.RelinkNeeded {
		return reply{content: msgRelink(accountName(acct.Username, acct.ID))}
	}
	if !b.serves(acct.ID) {
		r := b.forwardPin(inv, acct.ID, bt)
		if r.content != "" {
			return r
		}
		// Not forwarded after all: the account came here meanwhile.
	}
	return b.pinFor(inv, acct, bt)
}

// pinFor runs the batch on acct, an account this member serves: the
// board, the user's access to every channel, the account's count, then
// the pins.
func (b *Bot) pinFor(inv invocation, acct links.Account, bt batch) reply {
	ctx := inv.ctx
	name := accountName(acct.Username, acct.ID)
	sess, err := b.session(ctx, acct.ID)
	if err != nil {
		if errors.Is(err, links.ErrNoToken) || errors.Is(err, pinterest.ErrReauthRequired) {
			b.markRelink(ctx, acct.ID, sess)
			return reply{content: msgRelink(name)}
		}
		inv.log.Error().Err(err).Str("account", acct.ID).Msg("loading the account's token failed")
		return reply{content: msgLinksUnavailable}
	}

	boardID, boardName := acct.DefaultBoard, acct.DefaultBoardName
	if bt.boardID != "" {
		boardID, boardName = bt.boardID, bt.boardName
	} else if strings.TrimSpace(bt.board) != "" {
		boards, err := b.listBoards(ctx, acct.ID, sess)
		if err != nil {
			return reply{content: b.boardsTrouble(inv, acct.ID, sess, name, err)}
		}
		bd, ok := findBoard(boards, bt.board)
		if !ok {
			return reply{content: msgUnknownBoard(bt.board, name)}
		}
		boardID, boardName = bd.ID, bd.Name
	}
	if boardID == "" {
		return reply{content: msgNoBoard(name)}
	}
	if boardName == "" {
		boardName = boardID
	}

	if bt.target == nil {
		ac := &accessChecker{
			api: b.api, ctx: ctx, guildID: inv.guildID, userID: inv.userID,
			invokingChannel: inv.channelID, invokingPerms: inv.perms,
		}
		for _, r := range bt.refs {
			res, err := ac.canRead(r.ChannelID)
			if err != nil {
				inv.log.Warn().Str("error", errText(err)).Msg("permission check failed")
				return reply{content: fmt.Sprintf("Pinbot could not check whether you can read the channel of `%s`, so nothing was pinned. Please try again.", quoteInput(r.Raw))}
			}
			if !res.ok {
				return reply{content: fmt.Sprintf("Nothing was pinned: %s (`%s`).", res.why, quoteInput(r.Raw))}
			}
		}
	}

	st, err := b.cfg.Engine.Status(ctx, acct.ID)
	if err != nil {
		inv.log.Error().Err(err).Str("account", acct.ID).Msg("reading the pin count failed")
		return reply{content: msgEngineDown}
	}
	queue := bt.whenFull == whenFullQueue || bt.queueAll
	if bt.whenFull == "" && !bt.queueAll {
		if u, err := b.cfg.Links.User(ctx, inv.userID.String()); err == nil {
			queue = u.QueueWhenFull
		}
	}
	if !queue {
		if full(st) || st.Queued > 0 {
			b.reportRefused(bt.source, len(bt.refs), failLimit)
			return reply{content: b.rule.atLimit(st, name)}
		}
		if held(st) {
			b.reportRefused(bt.source, len(bt.refs), failHeld)
			return reply{content: msgHeld(st, name)}
		}
	}

	p := pinner{b: b, inv: inv, acct: acct, name: name, sess: sess, boardID: boardID, boardName: boardName, queue: queue, queueing: bt.queueAll, again: bt.again}
	p.run(bt)
	b.rememberPinned(ctx, acct.ID, boardID, p.pinned)
	p.enqueue()
	b.reportPins(bt.source, p.rep)
	return reply{content: p.rep.render(name, boardName)}
}

// result is what became of one picture or message.
type result int

const (
	resPinned result = iota + 1
	resFailed
	resSkipped
	resQueued
	// resDuplicate: pinned to the board before (pinURL); no slot used.
	resDuplicate
)

// entry is one line of a batch's report: a picture, or a whole message
// when it could not be read or has no picture.
type entry struct {
	ref messageRef
	// image is the picture's position among the message's images,
	// counting from 1; 0 for the whole message.
	image, images int
	res           result
	pinURL        string
	count         string
	why           string
	reason        string // why it was not pinned, for the metrics (failReasons)
	// job is a picture's queued pin, while it waits to be queued (res
	// resQueued), and due when it runs once queued.
	job *queuedPin
	due time.Time
}

// report is the outcome of a batch.
type report struct {
	entries []entry
	// stop, when set, is why the batch ended early; it is shown before
	// the first entry skipped because of it, whose why is stopWhy.
	stop       string
	stopWhy    string
	stopReason string // the reason of the entries skipped because of stop
	// queued, when set, says what was queued; shown after stop.
	queued string
}

// pinner makes the pins of one batch, one slot at a time.
type pinner struct {
	b         *Bot
	inv       invocation
	acct      links.Account
	name      string
	sess      *pinterest.Session
	boardID   string
	boardName string
	// queue says to queue what the limit refuses; queueing is set once
	// the limit refused a picture, so that every later one is queued
	// too, in order, and refusal is the account's status then.
	queue, queueing bool
	refusal         actors.Status
	// again pins pictures pinned to the board before all the same.
	again bool
	// pinned are the pictures the batch pinned, key → the pin's address,
	// remembered together once it ends (rememberPinned).
	pinned map[string]string

	attempts int
	rep      report
}

func (p *pinner) stopped() bool { return p.rep.stop != "" }

func (p *pinner) stopWith(reason, msg, why string) {
	if p.stopped() {
		return
	}
	p.rep.stop, p.rep.stopWhy, p.rep.stopReason = msg, why, reason
}

func (p *pinner) add(e entry) { p.rep.entries = append(p.rep.entries, e) }

// pinnedAny reports whether the batch has pinned something so far.
func (p *pinner) pinnedAny() bool {
	for _, e := range p.rep.entries {
		if e.res == resPinned {
			return true
		}
	}
	return false
}

// skippedRest says what became of the rest of a batch that Pinterest
// stopped: skipped after some pins, or nothing pinned at all.
func (p *pinner) skippedRest() string {
	if p.pinnedAny() {
		return ". Skipped remaining pins;"
	}
	return ", so nothing was pinned;"
}

// run pins every picture of every message in order, until done or
// stopped.
func (p *pinner) run(bt batch) {
	for _, ref := range bt.refs {
		if p.stopped() {
			p.add(entry{ref: ref, res: resSkipped, why: p.rep.stopWhy, reason: p.rep.stopReason})
			continue
		}
		msg, why, reason := p.fetch(ref, bt.target)
		if why != "" {
			p.add(entry{ref: ref, res: resFailed, why: why, reason: reason})
			continue
		}
		imgs := imagesOf(*msg)
		if len(imgs) == 0 {
			p.add(entry{ref: ref, res: resSkipped, why: "this message has no image", reason: failNoImage})
			continue
		}
		for j, im := range imgs {
			if slices.Contains(bt.skip, im.Key) {
				continue
			}
			e := entry{ref: ref, image: j + 1, images: len(imgs)}
			switch {
			case p.stopped():
				e.res, e.why, e.reason = resSkipped, p.rep.stopWhy, p.rep.stopReason
			case p.duplicate(im, &e):
			case p.attempts >= MaxPinsPerBatch:
				e.res, e.why, e.reason = resSkipped, fmt.Sprintf("one command pins at most %d images", MaxPinsPerBatch), failBatchCap
			case j > 0 && bt.target == nil && !p.chargeExtra():
				e.res, e.why, e.reason = resSkipped, whyThrottled, failThrottled
			case p.queueing:
				p.attempts++
				p.queueEntry(*msg, &e)
				e.job.Key = im.Key
			default:
				p.attempts++
				p.pin(*msg, im, &e)
			}
			p.add(e)
		}
	}
}

// duplicate reports whether im was pinned to the batch's board before,
// unless the batch pins again, and then marks e so: already pinned, with
// the pin's address, and no slot used.
func (p *pinner) duplicate(im image, e *entry) bool {
	if p.again {
		return false
	}
	u, ok := p.pinned[im.Key] // earlier in this batch, not yet remembered
	if !ok {
		u, ok = p.b.pinnedBefore(p.inv.ctx, p.acct.ID, p.boardID, im.Key)
	}
	if ok {
		e.res, e.pinURL, e.reason = resDuplicate, u, failDuplicate
	}
	return ok
}

// fetch returns the message: the command's target, or a fresh copy from
// Discord. why, when set, says why there is none, and reason is its
// reason for the metrics.
func (p *pinner) fetch(ref messageRef, target *discord.Message) (_ *discord.Message, why, reason string) {
	if target != nil {
		return target, "", ""
	}
	m, reason := p.b.fetchMessage(p.inv.ctx, ref.ChannelID, ref.MessageID)
	switch reason {
	case "":
		return m, "", ""
	case failMessageGone:
		return nil, "message not found (deleted, or not in that channel)", reason
	case failNoAccess:
		return nil, "Pinbot cannot read that channel", reason
	}
	return nil, "Discord did not return the message; try again later", reason
}

// pin makes one pin: reserve a slot, create the pin, then commit the slot
// if the pin exists or may exist, or release it if it surely does not.
func (p *pinner) pin(msg discord.Message, im image, e *entry) {
	ctx := p.inv.ctx
	eng := p.b.cfg.Engine
	start := time.Now()
	if ctx.Err() != nil {
		e.res, e.why, e.reason = resSkipped, "the command ran out of time", failTimeout
		p.stopWith(failTimeout, "The command took too long, so Pinbot stopped here.", "not attempted: out of time")
		return
	}
	// Once asked, the engine may grant the slot whatever becomes of ctx:
	// an answer lost to a cancelled ctx would leave the slot reserved,
	// unresolved, and counted as a pin at the end of its lease.
	rsctx, rscancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	g, err := eng.Reserve(rsctx, p.acct.ID, 1)
	rscancel()
	if errors.Is(err, actors.ErrNotOwner) {
		// A cluster member handing the account's partition over to
		// another: refused before any work, nothing reserved.
		p.inv.log.Info().Err(err).Str("account", p.acct.ID).Msg("the account moved to another member during the batch")
		e.res, e.why, e.reason = resSkipped, "not attempted: the account is moving between Pinbot's servers", failMoved
		p.stopWith(failMoved, msgMovedMidBatch, "not attempted: the account is moving between Pinbot's servers")
		return
	}
	if err != nil {
		p.inv.log.Error().Err(err).Str("account", p.acct.ID).Msg("reserving a slot failed")
		e.res, e.why, e.reason = resFailed, "not pinned: Pinbot's pin counter is unavailable", failEngine
		p.stopWith(failEngine, msgEngineDown, "not attempted: the pin counter is unavailable")
		return
	}
	if g.Granted == 0 {
		if p.queue {
			p.queueing, p.refusal = true, g.Status
			p.queueEntry(msg, e)
			return
		}
		if held(g.Status) {
			e.res, e.why, e.reason = resSkipped, "Pinterest asked Pinbot to wait", failHeld
			p.stopWith(failHeld, msgHeld(g.Status, p.name), "Pinterest asked Pinbot to wait")
			return
		}
		e.res, e.why, e.reason = resSkipped, "limit reached", failLimit
		p.stopWith(failLimit, p.b.rule.limitStop(g.Status, p.pinnedAny()), "limit reached")
		return
	}
	slot := g.Reservations()[0]
	r := p.b.sendPin(ctx, slot, p.sess, pinRequest(e.ref, msg, im, p.boardID, slot), func(error) bool { return p.inv.ctx.Err() != nil })

	rctx, cancel := context.WithTimeout(logctx.Inherit(p.b.workCtx, ctx), resolveTimeout)
	defer cancel()
	if r.kind == sentPinned {
		// Not waiting for the engine's answer: the count shown is the
		// grant's, which already held this slot.
		if cerr := eng.CommitAsync(rctx, slot, r.at); cerr != nil {
			// The slot stays counted until its lease ends: safe.
			p.inv.log.Error().Err(cerr).Str("account", p.acct.ID).Msg("committing a pin failed")
		}
		e.res, e.pinURL, e.count = resPinned, r.pin.URL, p.b.rule.pinCount(g.Status)
		if p.pinned == nil {
			p.pinned = map[string]string{}
		}
		p.pinned[im.Key] = r.pin.URL
		if p.b.onPin != nil {
			p.b.onPin(time.Since(start), r.took)
		}
		return
	}
	p.failed(rctx, slot, r, e)
}

// failed settles the slot of a pin that was not made and says why. An
// unknown pin's slot is left unresolved, so the engine counts it as a pin
// made at the end of its lease, the latest moment Pinterest can have made
// it; every other slot is released. A command makes nothing after a
// failure of Pinterest's: what is left is skipped, and why said once.
func (p *pinner) failed(ctx context.Context, slot actors.Reservation, r sendResult, e *entry) {
	eng := p.b.cfg.Engine
	unknown := r.kind == sentUnknown
	var st actors.Status
	var rerr error
	if unknown {
		st, rerr = eng.Status(ctx, slot.Account)
	} else {
		rerr = eng.ReleaseAsync(ctx, slot)
	}
	if rerr != nil {
		p.inv.log.Error().Err(rerr).Str("account", p.acct.ID).Bool("unknown", unknown).Msg("settling a failed pin's slot failed")
	}
	p.b.afterSend(p.inv.ctx, p.acct.ID, p.sess, r)
	e.res, e.why, e.reason = resFailed, r.why, r.reason
	switch r.cause {
	case causeUnknown:
		if rerr == nil {
			e.count = p.b.rule.pinCount(st)
		}
		if p.b.resolveSlotLater(p.inv, lookup{slot: slot, sess: p.sess, ended: r.at}, e.what(), p.name) {
			e.why += "; Pinbot will look for it on Pinterest and tell you what it finds"
		}
		p.stopWith(failUnavailable, "Pinterest is having trouble, so Pinbot stopped here. Please try the rest later.", "not attempted after Pinterest's error")
	case causeNoTime:
		p.stopWith(failNoTime, "Pinterest was slow to answer, so Pinbot stopped here. Please try the rest again.", "not attempted after the delay")
	case causeUnreachable:
		p.stopWith(failUnavailable, msgPinterestDown, "not attempted: Pinterest is not answering")
	case causeSpamBlock:
		p.stopWith(failSpamBlock, fmt.Sprintf("Pinterest's spam protection blocked pins from %s%s Pinbot will not pin with this account again before %s.", p.name, p.skippedRest(), timeText(r.hold)),
			"not attempted: spam block")
	case causeRateLimited:
		p.stopWith(failRateLimited, fmt.Sprintf("Pinterest rate limited %s%s Pinbot will not pin with this account again before %s.", p.name, p.skippedRest(), timeText(r.hold)),
			"not attempted: rate limited by Pinterest")
	case causeReauth:
		p.stopWith(failReauth, msgRelink(p.name), "not attempted: the account must be linked again")
	case causeRefusedStatus:
		p.stopWith(failRefused, "Pinterest refused the pin, so Pinbot stopped here. Check the board in /settings.", "not attempted after Pinterest's refusal")
	case causeEnded:
		p.stopWith(failTimeout, "The command took too long, so Pinbot stopped here.", "not attempted: out of time")
	case causeNotSent:
		p.stopWith(failUnavailable, msgPinterestDown, "not attempted after the error")
	}
}

// pinTitle is a pin's title: the first line of the message's text, else a
// plain label.
func pinTitle(m discord.Message) string {
	for _, line := range strings.Split(m.Content, "\n") {
		if t := strings.TrimSpace(line); t != "" {
			return truncateRunes(t, 100)
		}
	}
	return "Image from Discord"
}

// render writes the report for the user: a summary, each picture pinned
// (with its Pinterest URL and the count after it), failed or skipped (with
// why), and why the batch stopped, before what it skipped.
func (r report) render(name, boardName string) string {
	var pinned, failed, skipped, queued, already int
	for _, e := range r.entries {
		switch e.res {
		case resPinned:
			pinned++
		case resDuplicate:
			already++
		case resFailed:
			failed++
		case resSkipped:
			skipped++
		case resQueued:
			queued++
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Pinterest account %s, board **%s**: %d pinned", name, plain(boardName), pinned)
	if failed > 0 {
		fmt.Fprintf(&sb, ", %d failed", failed)
	}
	if queued > 0 {
		fmt.Fprintf(&sb, ", %d queued", queued)
	}
	if skipped > 0 {
		fmt.Fprintf(&sb, ", %d skipped", skipped)
	}
	if already > 0 {
		fmt.Fprintf(&sb, ", %d pinned before", already)
	}
	sb.WriteString(".\n")
	if r.queued != "" {
		sb.WriteString(r.queued + "\n")
	}
	stopShown := r.stop == ""
	for _, e := range r.entries {
		if !stopShown && e.res == resSkipped && e.why == r.stopWhy {
			sb.WriteString(r.stop + "\n")
			stopShown = true
		}
		sb.WriteString(e.line() + "\n")
	}
	if !stopShown {
		sb.WriteString(r.stop + "\n")
	}
	return strings.TrimRight(sb.String(), "\n")
}

// what names the entry's picture: its message's link and, for one of
// several images, which.
func (e entry) what() string {
	what := "<" + e.ref.jumpURL() + ">"
	if e.image > 0 && e.images > 1 {
		what += fmt.Sprintf(" (image %d of %d)", e.image, e.images)
	}
	return what
}

// line renders one entry.
func (e entry) line() string {
	what := e.what()
	switch e.res {
	case resPinned:
		return fmt.Sprintf("✅ %s → <%s> · %s", what, e.pinURL, e.count)
	case resSkipped:
		return fmt.Sprintf("⏭️ %s · skipped: %s", what, e.why)
	case resQueued:
		return fmt.Sprintf("⏳ %s · queued: starts at %s", what, timeText(e.due))
	case resDuplicate:
		return fmt.Sprintf("↩️ %s · already pinned → <%s>", what, e.pinURL)
	}
	s := fmt.Sprintf("❌ %s · failed: %s", what, e.why)
	if e.count != "" {
		s += " · " + e.count
	}
	return s
}

// autocompletePin offers the active account's boards for /pin's board:
// option.
func (b *Bot) autocompletePin(d discord.AutocompleteInteractionData, e *event) error {
	choices := []discord.AutocompleteChoice{}
	if d.Focused().Name == optBoard {
		typed := strings.ToLower(strings.TrimSpace(d.String(optBoard)))
		acct, refusal := b.activeAccount(e.Ctx, e.User().ID.String())
		if refusal == "" && !acct.RelinkNeeded {
			{
				if boards, _, err := b.accountBoards(e.Ctx, acct.ID); err == nil {
					for _, bd := range boards {
						if len(choices) == maxSelectOptions {
							break
						}
						if typed != "" && !strings.Contains(strings.ToLower(bd.Name), typed) {
							continue
						}
						choices = append(choices, discord.AutocompleteChoiceString{
							Name:  truncateRunes(firstNonEmpty(bd.Name, bd.ID), 100),
							Value: bd.ID,
						})
					}
				}
			}
		}
	}
	return b.autocompleteResult(e, choices)
}
