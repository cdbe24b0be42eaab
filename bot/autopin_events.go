package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/logctx"
)

// Messages edited and deleted, and auto-pin channels that can no longer
// be read.
//
// With auto-pin on, the gateway hands MESSAGE_UPDATE and MESSAGE_DELETE
// to HandleMessage as it does MESSAGE_CREATE: on its reading goroutine,
// judged by the server's rules kept in memory, and worked on in the
// channel's lane, after the earlier events of the channel.
//
//   - An edited message of an active auto-pin channel is read again, and
//     its pictures that are neither queued (a waiting or running pin of
//     the message on the rule's account and board) nor pinned to the
//     board before are queued, as a new message's are. An edit that only
//     unfolds a link's embed, or keeps the same attachments, queues
//     nothing; an unfolded embed whose picture is new is queued (it may
//     unfold after the message was first read). A message posted more
//     than recentFor ago of which nothing was queued or pinned (posted
//     before the rule, or while it was paused) queues nothing when
//     edited: the rule takes the messages posted from its start, and
//     their pictures added later. A message's author is checked once it
//     is fetched (an update may not say it). A pin reaction does
//     nothing on an edit: it pinned what the message had when it was
//     worked on; a picture added later needs the reaction again.
//   - A deleted message's waiting pins are canceled, every user's: those
//     of an auto-pin channel's rule (its account), and those of the users
//     whose pin reaction on the message ran lately (remembered in memory
//     for pinnedMessageFor, at most maxReactionLanes messages). A pin
//     already running is left to end: it may have been sent, and its slot
//     counts. Each user whose pins were canceled gets one line in their
//     digest (a DM per deleted message would be spam in a busy channel).
//     A pin the delete could not find (a restart forgot the reaction)
//     finds the message gone when it runs, and fails without being sent.
//
// An auto-pin channel pauses itself when its rule's owner may no longer
// view it or read its history, or Pinbot may not: that is found when a
// message of the channel is worked on (the owner's access is trusted for
// guildCacheFor) and when a queued pin runs, and the owner is told in
// their digest. Pinbot does not ask for the GUILDS intent to watch
// CHANNEL_UPDATE and role changes: with it, every server's full
// GUILD_CREATE would come at each connection for a check that the next
// message or queued pin makes anyway. /autopin resume checks both
// accesses again before it resumes.

// More results of an auto-pin lane's events.
const (
	autopinUnchanged = "unchanged" // an edit with no new picture
	autopinCanceled  = "canceled"  // a delete canceled waiting pins
	autopinNone      = "none"      // a delete found no waiting pin
	autopinPaused    = "paused"    // the channel can no longer be read: its rule paused itself
	autopinOld       = "old"       // an edit of an old message auto-pin took nothing of
)

// pinnedMessageFor is how long a message whose pin reaction ran is
// remembered, so that deleting it cancels the pins it queued.
const pinnedMessageFor = 24 * time.Hour

// reacted is a message whose pin reactions ran: by whom, last when.
type reacted struct {
	users []snowflake.ID
	at    time.Time
}

// notePinned remembers that user's pin reaction on message ran at now.
// When maxReactionLanes messages are remembered and none is out of date,
// it is not: a delete then leaves its pins to fail when they run.
func (rs *reactionState) notePinned(message, user snowflake.ID, now time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.pinned == nil {
		rs.pinned = make(map[snowflake.ID]reacted)
	}
	r, ok := rs.pinned[message]
	if !ok && len(rs.pinned) >= maxReactionLanes {
		for id, p := range rs.pinned {
			if now.Sub(p.at) >= pinnedMessageFor {
				delete(rs.pinned, id)
			}
		}
		if len(rs.pinned) >= maxReactionLanes {
			return
		}
	}
	if !slices.Contains(r.users, user) {
		r.users = append(r.users, user)
	}
	r.at = now
	rs.pinned[message] = r
}

// hasPinned reports whether a pin reaction on message ran lately.
func (rs *reactionState) hasPinned(message snowflake.ID, now time.Time) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.pinned[message]
	return ok && now.Sub(r.at) < pinnedMessageFor
}

// takePinned returns the users whose pin reaction on message ran lately,
// and forgets them.
func (rs *reactionState) takePinned(message snowflake.ID, now time.Time) []snowflake.ID {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.pinned[message]
	delete(rs.pinned, message)
	if !ok || now.Sub(r.at) >= pinnedMessageFor {
		return nil
	}
	return r.users
}

// laneEvent works on one event of an auto-pin lane and returns its
// result.
func (b *Bot) laneEvent(m discordio.Message) string {
	if m.Kind == discordio.MessageDeleted {
		return b.messageDeleted(m)
	}
	return b.autopinMessage(m)
}

// onWorker waits for a worker (Config.Workers); release gives it back.
// False: the bot is closing, and nothing is to be done.
func (b *Bot) onWorker() (release func(), ok bool) {
	select {
	case b.workers <- struct{}{}:
		release = func() { <-b.workers }
	case <-b.closingCh:
		release = func() {}
	}
	if b.isClosing() {
		release()
		return nil, false
	}
	return release, true
}

// messageDeleted cancels the waiting pins of a deleted message (see
// above) and tells each user whose pins were canceled.
func (b *Bot) messageDeleted(m discordio.Message) string {
	ctx := logctx.With(b.workCtx, "guild_id", m.GuildID.String())
	ctx = logctx.With(ctx, "channel_id", m.ChannelID.String())
	ctx = logctx.With(ctx, "message_id", m.MessageID.String())
	users := b.reactions.takePinned(m.MessageID, b.cfg.Now())
	release, ok := b.onWorker()
	if !ok {
		b.logger(ctx).Info().Msg("deleted message's queued pins not canceled: closing")
		return autopinClosing
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.HandlerTimeout)
	defer cancel()
	log := b.logger(ctx)

	var accounts []string
	if r, ok := b.autopin.ruleOf(m.GuildID, m.ChannelID); ok {
		accounts = append(accounts, r.Account)
	}
	for _, u := range users {
		lu, err := b.cfg.Links.User(ctx, u.String())
		if err != nil {
			log.Error().Err(err).Str("user_id", u.String()).Msg("reading the user's links failed; their queued pins of the deleted message are left to fail when they run")
			continue
		}
		for _, a := range lu.Accounts {
			if !slices.Contains(accounts, a) {
				accounts = append(accounts, a)
			}
		}
	}
	canceled := map[snowflake.ID]int{} // per user who queued them
	for _, account := range accounts {
		js, _, err := b.accountJobs(ctx, account)
		if err != nil {
			log.Error().Err(err).Str("account", account).Msg("reading the account's queued pins failed; those of the deleted message are left to fail when they run")
			continue
		}
		var ids []uint64
		for _, j := range js {
			if q, err := decodeQueuedPin(j.Payload); err == nil && j.State == actors.JobWaiting &&
				q.Message == m.MessageID && q.Channel == m.ChannelID {
				ids = append(ids, j.ID)
			}
		}
		if len(ids) == 0 {
			continue
		}
		done, _, err := b.cancelJobs(ctx, account, ids)
		if err != nil {
			log.Error().Err(err).Str("account", account).Int("jobs", len(ids)).Msg("canceling the deleted message's queued pins failed; they fail when they run")
			continue
		}
		for _, j := range done {
			if q, err := decodeQueuedPin(j.Payload); err == nil {
				canceled[q.User]++
			}
		}
		log.Info().Str("account", account).Int("jobs", len(done)).Msg("queued pins canceled: the message was deleted")
	}
	if len(canceled) == 0 {
		return autopinNone
	}
	ref := messageRef{GuildID: m.GuildID, ChannelID: m.ChannelID, MessageID: m.MessageID}
	for user, n := range canceled {
		b.tell(user, m.GuildID, m.ChannelID, msgDeletedCanceled(ref.jumpURL(), n))
	}
	return autopinCanceled
}

// alreadyThere returns the keys of imgs, the pictures of an edited
// message, that need no new pin on account's board: queued (a waiting or
// running pin of the message) or pinned before.
func (b *Bot) alreadyThere(ctx context.Context, account, board string, message snowflake.ID, imgs []image) ([]string, error) {
	js, _, err := b.accountJobs(ctx, account)
	if err != nil {
		return nil, err
	}
	queued := map[string]bool{}
	for _, j := range js {
		q, err := decodeQueuedPin(j.Payload)
		if err != nil || j.State == actors.JobDone || q.Message != message || q.Board != board {
			continue
		}
		if im, ok := q.imageIn(imgs); ok {
			queued[im.Key] = true
		}
	}
	var skip []string
	for _, im := range imgs {
		if queued[im.Key] {
			skip = append(skip, im.Key)
		} else if _, ok := b.pinnedBefore(ctx, account, board, im.Key); ok {
			skip = append(skip, im.Key)
		}
	}
	return skip, nil
}

// forgetAccess forgets what was found of the rule owners' access to
// channel (see ownerMayRead).
func (ap *autopinState) forgetAccess(channel snowflake.ID) {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	for k := range ap.access {
		if k.channel == channel {
			delete(ap.access, k)
		}
	}
}

// errRuleUnchanged says a rule to pause was gone, paused or changed.
var errRuleUnchanged = errors.New("autopin: the rule is not the one to pause")

// pauseLost pauses the rule of channel, if it is still the one of owner
// and account and active, because why (its owner, or Pinbot, can no
// longer read the channel), and tells the owner. It reports whether it
// paused it.
func (b *Bot) pauseLost(ctx context.Context, guild, channel, owner snowflake.ID, account, why string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
	defer cancel()
	var after []links.AutopinRule
	err := b.cfg.Links.UpdateAutopinRules(ctx, guild.String(), func(rs []links.AutopinRule) ([]links.AutopinRule, error) {
		i := slices.IndexFunc(rs, func(r links.AutopinRule) bool {
			return r.Channel == channel.String() && r.Owner == owner.String() && r.Account == account && !r.Paused
		})
		if i < 0 {
			return nil, errRuleUnchanged
		}
		rs[i].Paused = true
		after = rs
		return rs, nil
	})
	log := b.logger(ctx).With().Str("guild_id", guild.String()).Str("channel_id", channel.String()).Str("account", account).Logger()
	switch {
	case errors.Is(err, errRuleUnchanged):
		return false
	case err != nil:
		log.Error().Err(err).Msg("pausing an auto-pin channel that can no longer be read failed")
		return false
	}
	b.autopin.putRules(guild, after, b.cfg.Now())
	log.Info().Str("why", why).Msg("an auto-pin channel paused itself: it can no longer be read")
	b.tell(owner, guild, channel, msgAutopinLost(channel, why))
	return true
}

// readableBy reports whether user may view channel and read its history,
// and if not why.
func (b *Bot) readableBy(ctx context.Context, guild, channel, user snowflake.ID) (bool, string, error) {
	ac := &accessChecker{api: b.api, ctx: ctx, guildID: guild, userID: user}
	res, err := ac.canRead(channel)
	return res.ok, res.why, err
}

// autopinReadable checks that both a rule's owner and Pinbot may still
// view its channel and read its history; botLost, when not, says Pinbot
// may not (else the owner may not).
func (b *Bot) autopinReadable(ctx context.Context, guild, channel, owner snowflake.ID) (ok, botLost bool, err error) {
	// Pinbot first: a channel it cannot view hides the owner's access.
	if ok, _, err := b.readableBy(ctx, guild, channel, b.appID); err != nil || !ok {
		return false, true, err
	}
	if ok, _, err := b.readableBy(ctx, guild, channel, owner); err != nil || !ok {
		return false, false, err
	}
	return true, false, nil
}

// Who can no longer read an auto-pin channel, as its owner is told.
const (
	whyOwnerLost = "you can no longer view it or read its history"
	whyBotLost   = "Pinbot can no longer view it or read its history"
)

// msgDeletedCanceled is a digest's line: a deleted message's queued pins
// were canceled.
func msgDeletedCanceled(link string, n int) string {
	return fmt.Sprintf("🗑️ <%s> was deleted, so Pinbot canceled %s of it.", link, countText(n, "queued pin", "queued pins"))
}

// msgAutopinLost tells a rule's owner that their channel paused itself.
func msgAutopinLost(channel snowflake.ID, why string) string {
	return fmt.Sprintf("⏸️ <#%s> paused itself: %s. Its pictures are not queued until the permissions are back and `/autopin resume` runs.", channel, why)
}

// msgAutopinResumeRefused refuses to resume a channel that cannot be read.
func msgAutopinResumeRefused(channel snowflake.ID, why string) string {
	return fmt.Sprintf("<#%s> stays paused: %s. Give back View Channel and Read Message History, then resume it.", channel, why)
}
