package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/links"
)

// Custom IDs of the /queue components (see idSwitch). The "Cancel all"
// button's ID ends with the account; the message menu's values are
// "account/message". Both edit the /queue message they are on (see
// editsInPlace).
const (
	idQueue        = "/" + cmdQueue + "/"
	idQueueAll     = idQueue + "all"
	idQueueMessage = idQueue + "message"
)

// Limits of the /queue reply.
const (
	// maxRecent is how many done jobs /queue shows per account.
	maxRecent = 10
	// maxButtonRows is how many rows of "Cancel all" buttons go under the
	// message menu: Discord allows 5 rows of at most 5 buttons.
	maxButtonRows    = 4
	maxButtonsPerRow = 5
	// maxButtonLabel is Discord's limit on a button's label.
	maxButtonLabel = 80
	// maxWhyRunes bounds the reason shown for one done job.
	maxWhyRunes = 200
	// moreRoom is kept free in the reply for the "… and N more" line.
	moreRoom = 24
)

// What /queue says.
const (
	msgQueueTitle       = "**Your queued pins**"
	msgQueueEmpty       = "Nothing is queued for your Pinterest accounts, and nothing ran from their queues recently."
	msgQueueUnreadable  = "Pinbot cannot read that account's queue right now, so nothing was canceled. Please try again in a few minutes."
	msgQueueCancelError = "Pinbot cannot cancel pins right now (its storage is unavailable), so nothing was canceled. Please try again later."
	// msgQueueGone answers a component whose pins are no longer waiting.
	// It is also the answer about an account the user has not linked and
	// has queued nothing on, so that it tells nothing of other users' pins.
	msgQueueGone = "Nothing was canceled: those pins are no longer waiting (they already started, or were canceled)."
)

// queuedJob is a job of an account's queue with its payload decoded.
type queuedJob struct {
	actors.Job
	pin queuedPin
	ok  bool // the payload decoded
}

// accountQueue is what one user may see of one account's queue.
type accountQueue struct {
	acct    links.Account
	st      actors.Status
	running []queuedJob
	waiting []queuedJob // in queue order
	done    []actors.Job
	// unreadable is set when the engine could not list the jobs.
	unreadable bool
}

// mayCancel reports whether user may see and cancel a queued pin: one of
// an account the user has linked (it pins to their account), or one the
// user queued. Another user's pin on an account the user has not linked
// is neither shown nor canceled.
func mayCancel(user snowflake.ID, linked bool, j queuedJob) bool {
	return linked || (j.ok && j.pin.User == user)
}

// readQueue lists acct's jobs that user may see: running ones, waiting
// ones in queue order, and, when the user has linked the account, the
// maxRecent newest done ones the user may see, newest first.
func (b *Bot) readQueue(ctx context.Context, user snowflake.ID, acct links.Account, linked bool) (accountQueue, error) {
	jobs, st, err := b.accountJobs(ctx, acct.ID)
	q := accountQueue{acct: acct, st: st}
	if err != nil {
		return q, err
	}
	for _, j := range jobs {
		qj := queuedJob{Job: j}
		var derr error
		qj.pin, derr = decodeQueuedPin(j.Payload)
		qj.ok = derr == nil
		if !mayCancel(user, linked, qj) {
			continue
		}
		if j.State == actors.JobDone {
			q.done = append(q.done, j)
			continue
		}
		switch j.State {
		case actors.JobRunning:
			q.running = append(q.running, qj)
		case actors.JobWaiting:
			q.waiting = append(q.waiting, qj)
		}
	}
	// The engine keeps done jobs in the order they finished.
	slices.Reverse(q.done)
	slices.SortStableFunc(q.done, func(x, y actors.Job) int { return y.Finished.Compare(x.Finished) })
	q.done = q.done[:min(len(q.done), maxRecent)]
	return q, nil
}

// handleQueue serves /queue: the queued pins the user may see, per linked
// account, with a menu to cancel one message's waiting pins and a
// "Cancel all" button per account.
func (b *Bot) handleQueue(_ discord.SlashCommandInteractionData, e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	b.reply(inv.ctx, inv.token, b.queue(inv, ""))
	return nil
}

// queue builds the /queue reply, note first when not empty.
func (b *Bot) queue(inv invocation, note string) reply {
	ctx := inv.ctx
	u, err := b.cfg.Links.User(ctx, inv.userID.String())
	if err != nil {
		inv.log.Error().Err(err).Msg("reading the user's links failed")
		return reply{content: withNote(note, msgLinksUnavailable)}
	}
	if len(u.Accounts) == 0 {
		return reply{content: withNote(note, msgNoAccount)}
	}
	qs := make([]accountQueue, 0, len(u.Accounts))
	for _, id := range u.Accounts {
		a, err := b.cfg.Links.Account(ctx, id)
		if err != nil {
			inv.log.Error().Err(err).Str("account", id).Msg("reading an account failed")
		}
		if a.ID == "" {
			a.ID = id
		}
		q, err := b.readQueue(ctx, inv.userID, a, true)
		if err != nil {
			inv.log.Error().Err(err).Str("account", id).Msg("reading the account's queue failed")
			q.unreadable = true
		}
		qs = append(qs, q)
	}
	return b.renderQueue(inv.userID, note, qs)
}

// withNote puts note, when not empty, on a line before s.
func withNote(note, s string) string {
	if note == "" {
		return s
	}
	return note + "\n" + s
}

// queueLine is one line of the /queue reply; item lines (a pin, a
// result) are counted in "… and N more", headers are not.
type queueLine struct {
	text string
	item bool
}

// queueMessage is one message with waiting pins, an option of the menu.
type queueMessage struct {
	n       int // its number in the reply
	account links.Account
	message snowflake.ID
	pins    int
	first   time.Time // the first pin's start
	now     time.Time
}

// renderQueue writes the /queue reply for user: per account its running
// pins, its waiting pins with their start times and what ran recently,
// within Discord's 2000 characters, and the components to cancel.
func (b *Bot) renderQueue(user snowflake.ID, note string, qs []accountQueue) reply {
	var lines []queueLine
	var msgs []queueMessage
	numbers := map[string]int{} // account/message → index in msgs
	anything := false
	for _, q := range qs {
		head := "**" + accountName(q.acct.Username, q.acct.ID) + "**"
		if q.unreadable {
			anything = true
			lines = append(lines, queueLine{text: head + " — its queue cannot be read right now."})
			continue
		}
		head += " — " + b.rule.pinsLine(q.st)
		if q.acct.RelinkNeeded {
			head += " — needs /link again"
		}
		if len(q.running)+len(q.waiting)+len(q.done) == 0 {
			lines = append(lines, queueLine{text: head + " — nothing queued"})
			continue
		}
		anything = true
		lines = append(lines, queueLine{text: head})
		for _, j := range q.running {
			lines = append(lines, queueLine{text: "▶️ " + pinText(user, j) + " · running now", item: true})
		}
		for _, j := range q.waiting {
			mark := ""
			if j.ok {
				key := q.acct.ID + "/" + j.pin.Message.String()
				i, seen := numbers[key]
				if !seen {
					i = len(msgs)
					numbers[key] = i
					msgs = append(msgs, queueMessage{n: i + 1, account: q.acct, message: j.pin.Message, first: j.Due, now: q.st.At})
				}
				msgs[i].pins++
				mark = fmt.Sprintf("`%d` ", msgs[i].n)
			}
			lines = append(lines, queueLine{text: "⏳ " + mark + pinText(user, j) + " · starts at " + timeText(j.Due), item: true})
		}
		for _, j := range q.done {
			lines = append(lines, queueLine{text: doneText(user, j), item: true})
		}
	}
	if !anything {
		return reply{content: withNote(note, msgQueueEmpty)}
	}
	return reply{content: fitLines(withNote(note, msgQueueTitle), lines, maxMessageRunes), components: queueComponents(qs, msgs)}
}

// pinText names a queued pin for user: its message's link, which image,
// and who queued it when that is someone else.
func pinText(user snowflake.ID, j queuedJob) string {
	if !j.ok {
		return "a queued pin Pinbot cannot read"
	}
	s := "<" + j.pin.ref().jumpURL() + ">"
	if j.pin.Images > 1 {
		s += fmt.Sprintf(" (image %d of %d)", j.pin.Image, j.pin.Images)
	}
	if j.pin.User != user {
		s += fmt.Sprintf(" · queued by <@%d>", j.pin.User)
	}
	return s
}

// doneText is the line of a done job: which pin, and what became of it.
func doneText(user snowflake.ID, j actors.Job) string {
	qj := queuedJob{Job: j}
	var err error
	qj.pin, err = decodeQueuedPin(j.Payload)
	qj.ok = err == nil
	if !qj.ok {
		return resultText(j)
	}
	return pinText(user, qj) + " · " + resultText(j)
}

// resultText is the outcome of a done job.
func resultText(j actors.Job) string {
	when := " · " + timeText(j.Finished)
	r, ok := decodeJobResult(j.Result)
	if !ok {
		return "❔ outcome not recorded" + when
	}
	why := truncateRunes(r.Why, maxWhyRunes)
	switch r.Outcome {
	case jobPinned:
		if r.PinURL == "" {
			return "✅ pinned" + when
		}
		return "✅ pinned → <" + r.PinURL + ">" + when
	case jobDuplicate:
		return "↩️ already pinned → <" + r.PinURL + ">" + when
	case jobFailed:
		if why == "" {
			return "❌ failed" + when
		}
		return "❌ failed: " + why + when
	case jobUnknown:
		if why == "" {
			return "❔ may exist (counts toward the limit)" + when
		}
		return "❔ may exist (counts toward the limit): " + why + when
	}
	return "❔ " + plain(r.Outcome) + when
}

// fitLines joins head and lines within max runes: when they do not all
// fit, the lines that do are followed by "… and N more", N counting the
// item lines left out.
func fitLines(head string, lines []queueLine, max int) string {
	var sb strings.Builder
	sb.WriteString(head)
	total := utf8.RuneCountInString(head)
	all := total
	for _, l := range lines {
		all += 1 + utf8.RuneCountInString(l.text)
	}
	if all <= max {
		for _, l := range lines {
			sb.WriteString("\n" + l.text)
		}
		return sb.String()
	}
	for i, l := range lines {
		n := 1 + utf8.RuneCountInString(l.text)
		if total+n > max-moreRoom {
			left := 0
			for _, r := range lines[i:] {
				if r.item {
					left++
				}
			}
			if left > 0 {
				fmt.Fprintf(&sb, "\n… and %d more", left)
			}
			break
		}
		sb.WriteString("\n" + l.text)
		total += n
	}
	return sb.String()
}

// queueComponents are the menu of messages with waiting pins (the first
// maxSelectOptions) and a "Cancel all" button per account with waiting
// pins (as many as fit).
func queueComponents(qs []accountQueue, msgs []queueMessage) []discord.LayoutComponent {
	var comps []discord.LayoutComponent
	if len(msgs) > 0 {
		opts := make([]discord.StringSelectMenuOption, 0, min(len(msgs), maxSelectOptions))
		for _, m := range msgs[:min(len(msgs), maxSelectOptions)] {
			pins := "its waiting pin"
			if m.pins > 1 {
				pins = "its " + countText(m.pins, "waiting pin", "waiting pins")
			}
			// A description shows no markdown, so no Discord timestamp:
			// the start the list shows, in the plain form of the same
			// instant (plainTimeText).
			opts = append(opts, discord.StringSelectMenuOption{
				Label:       fmt.Sprintf("Message %d: cancel %s", m.n, pins),
				Value:       m.account.ID + "/" + m.message.String(),
				Description: truncateRunes(accountLabel(m.account.Username, m.account.ID)+" · the first starts at "+plainTimeText(m.first, m.now), 100),
			})
		}
		comps = append(comps, discord.NewActionRow(discord.NewStringSelectMenu(idQueueMessage, "Cancel the waiting pins of one message", opts...)))
	}
	var waiting []links.Account
	for _, q := range qs {
		if len(q.waiting) > 0 {
			waiting = append(waiting, q.acct)
		}
	}
	var row []discord.InteractiveComponent
	for _, a := range waiting[:min(len(waiting), maxButtonRows*maxButtonsPerRow)] {
		label := "Cancel all waiting pins"
		if len(waiting) > 1 {
			label = truncateRunes("Cancel all on "+accountLabel(a.Username, a.ID), maxButtonLabel)
		}
		row = append(row, discord.NewDangerButton(label, idQueueAll+"/"+a.ID))
		if len(row) == maxButtonsPerRow {
			comps = append(comps, discord.NewActionRow(row...))
			row = nil
		}
	}
	if len(row) > 0 {
		comps = append(comps, discord.NewActionRow(row...))
	}
	return comps
}

// handleQueueAll serves a "Cancel all" button: every waiting pin of the
// account the user may cancel.
func (b *Bot) handleQueueAll(e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	b.reply(inv.ctx, inv.token, b.cancelQueued(inv, e.account, func(queuedJob) bool { return true }))
	return nil
}

// handleQueueMessage serves the message menu: the waiting pins of the
// picked message the user may cancel.
func (b *Bot) handleQueueMessage(e *event) error {
	inv := b.invocation(e.Ctx, e.Interaction)
	v, ok := selected(e)
	account, message, found := strings.Cut(v, "/")
	id, err := snowflake.Parse(message)
	if !ok || !found || err != nil {
		b.reply(inv.ctx, inv.token, b.queue(inv, "Pick one message from the menu."))
		return nil
	}
	b.reply(inv.ctx, inv.token, b.cancelQueued(inv, account, func(j queuedJob) bool { return j.ok && j.pin.Message == id }))
	return nil
}

// cancelQueued cancels the waiting pins of accountID that match and the
// user may cancel (see mayCancel), read afresh, and answers with what was
// canceled and the refreshed list.
func (b *Bot) cancelQueued(inv invocation, accountID string, match func(queuedJob) bool) reply {
	ctx := inv.ctx
	u, err := b.cfg.Links.User(ctx, inv.userID.String())
	if err != nil {
		inv.log.Error().Err(err).Msg("reading the user's links failed")
		return reply{content: msgLinksUnavailable}
	}
	linked := slices.Contains(u.Accounts, accountID)
	acct, err := b.cfg.Links.Account(ctx, accountID)
	switch {
	case err == nil:
	case !linked && (errors.Is(err, links.ErrNoToken) || errors.Is(err, links.ErrInvalid)):
		// No one links the account, or the ID names none: the engine is
		// not asked about it for someone who did not link it.
		inv.log.Warn().Str("account", accountID).Msg("cancel on an account no one links refused")
		return b.queue(inv, msgQueueGone)
	case !linked:
		inv.log.Error().Err(err).Str("account", accountID).Msg("reading an account failed")
		return reply{content: msgLinksUnavailable}
	default:
		inv.log.Error().Err(err).Str("account", accountID).Msg("reading an account failed")
	}
	if acct.ID == "" {
		acct.ID = accountID
	}
	if !linked {
		inv.log.Warn().Str("account", accountID).Msg("cancel on an account the user has not linked: only the pins they queued are considered")
	}
	q, err := b.readQueue(ctx, inv.userID, acct, linked)
	if err != nil {
		inv.log.Error().Err(err).Str("account", accountID).Msg("reading the account's queue failed")
		return b.queue(inv, msgQueueUnreadable)
	}
	var ids []uint64
	for _, j := range q.waiting {
		if match(j) {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) == 0 {
		return b.queue(inv, msgQueueGone)
	}
	canceled, _, err := b.cancelJobs(ctx, accountID, ids)
	if err != nil {
		inv.log.Error().Err(err).Str("account", accountID).Int("jobs", len(ids)).Msg("canceling queued pins failed")
		return b.queue(inv, msgQueueCancelError)
	}
	inv.log.Info().Str("account", accountID).Int("jobs", len(canceled)).Msg("queued pins canceled")
	return b.queue(inv, msgCanceled(len(canceled), len(ids)))
}

// msgCanceled says how many of the asked waiting pins were canceled; the
// others started (or were canceled) between the read and the cancel.
func msgCanceled(n, asked int) string {
	if n == 0 {
		return msgQueueGone
	}
	s := "Canceled " + countText(n, "queued pin", "queued pins") + "."
	switch left := asked - n; {
	case left == 1:
		s += " 1 more was no longer waiting."
	case left > 1:
		s += fmt.Sprintf(" %d more were no longer waiting.", left)
	}
	return s
}
