package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/actors"
)

// queueEntry marks e, a picture of msg the limit refused, to be queued.
func (p *pinner) queueEntry(msg discord.Message, e *entry) {
	e.res = resQueued
	e.job = &queuedPin{
		Guild:       e.ref.GuildID,
		Channel:     msg.ChannelID,
		Message:     msg.ID,
		Image:       e.image,
		Images:      e.images,
		User:        p.inv.userID,
		From:        p.inv.channelID,
		Board:       p.boardID,
		BoardName:   p.boardName,
		Interaction: p.inv.id,
		Again:       p.again,
	}
	if e.job.Channel == 0 {
		e.job.Channel = e.ref.ChannelID
	}
	if e.job.Message == 0 {
		e.job.Message = e.ref.MessageID
	}
}

// enqueue queues, in one durable write, the pictures marked by
// queueEntry, and says so in the report: each entry gets its start time,
// and the report what was queued and when the first and last run. What
// the account's queue has no room for is skipped.
func (p *pinner) enqueue() {
	var idx []int
	var payloads [][]byte
	for i, e := range p.rep.entries {
		if e.res == resQueued {
			idx = append(idx, i)
			payloads = append(payloads, e.job.encode())
		}
	}
	if len(idx) == 0 {
		return
	}
	eng := p.b.cfg.Engine
	// Once asked, the engine may queue whatever becomes of the command's
	// context: the answer must be read.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.inv.ctx), resolveTimeout)
	defer cancel()
	q, err := eng.Enqueue(ctx, p.acct.ID, payloads)
	if err != nil {
		p.inv.log.Error().Err(err).Str("account", p.acct.ID).Msg("queueing pins failed")
		for _, i := range idx {
			p.rep.entries[i].res, p.rep.entries[i].why = resSkipped, "not queued: Pinbot's storage is unavailable"
			p.rep.entries[i].reason = failEngine
		}
		p.rep.queued = p.b.rule.refusedStop(p.refusal, p.name, p.pinnedAny()) + " Pinbot could not queue the rest (its storage is unavailable); please try again later."
		return
	}
	maxQueue := countText(eng.Config().MaxQueue, "pin", "pins")
	for k, i := range idx {
		e := &p.rep.entries[i]
		e.job = nil
		if k >= len(q.Jobs) {
			e.res, e.why, e.reason = resSkipped, fmt.Sprintf("this account's queue is full (%s)", maxQueue), failQueueFull
			continue
		}
		e.due = q.Jobs[k].Due
		if q.Jobs[k].State != actors.JobWaiting {
			e.due = q.Status.At
		}
	}
	if len(q.Jobs) == 0 {
		p.rep.queued = p.b.rule.refusedStop(q.Status, p.name, p.pinnedAny()) + fmt.Sprintf(" This account's queue is full (%s), so nothing was queued.", maxQueue)
		return
	}
	first, last := p.rep.entries[idx[0]].due, p.rep.entries[idx[len(q.Jobs)-1]].due
	var sb strings.Builder
	sb.WriteString(p.b.rule.queuedStop(q.Status, p.name, p.pinnedAny(), len(q.Jobs), len(idx), first, last))
	sb.WriteString(" Pinbot will send you the results in a direct message; /queue shows and cancels queued pins.")
	switch left := len(idx) - len(q.Jobs); {
	case left == 1:
		fmt.Fprintf(&sb, " 1 more did not fit in the account's queue (%s) and was skipped.", maxQueue)
	case left > 1:
		fmt.Fprintf(&sb, " %d more did not fit in the account's queue (%s) and were skipped.", left, maxQueue)
	}
	p.rep.queued = sb.String()
}
