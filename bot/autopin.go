package bot

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/internal/logctx"
)

// Auto-pin channels. A server's channel may pin itself (/autopin,
// autopin_command.go): every picture posted in it by a member who is not
// a bot is queued for the rule's account and board, as the rule's owner
// (their queue, their digest), each with its exact start time, as
// when_full:queue does, never pinned at once, so that the account's limit
// and the order of the pictures hold. Pictures already pinned to the
// board are not queued again (the history of pins). In a cluster the
// queueing happens on the account's owner, as a forwarded /pin does.
//
// The gateway hands every MESSAGE_CREATE of a guild message over on its
// reading goroutine (HandleMessage), which must not wait: the rules of
// each server are kept in memory, as the servers' emojis are (a
// guildCache, server_cache.go: read at most once per guildCacheFor, the
// messages that come during a read held until it ends), and a message by
// a bot, one the event shows to have no picture, or one of a channel
// without an active rule, is dropped at once. A message of an auto-pin channel is worked
// on on a worker, after the earlier messages of its channel: it is
// fetched over REST (without the message content intent the event
// carries no attachment), and its pictures are queued. Edits and deletes
// take the same path: see autopin_events.go.

// Limits of what auto-pin keeps in memory.
const (
	// maxAutopinLanes bounds the channels whose messages are under way
	// at once, and maxAutopinLane the messages waiting in one channel;
	// a message beyond either is dropped, and logged.
	maxAutopinLanes = 10_000
	maxAutopinLane  = 1_000
)

// The results of an auto-pin message, for the tests' onDone and the logs.
const (
	autopinQueued    = "queued"     // its pictures went through the queue's batch
	autopinNoImage   = "no_image"   // fetched: it has no picture
	autopinUnlinked  = "unlinked"   // the rule's account is no longer its owner's
	autopinFailed    = "failed"     // the message, the links or the owner could not be read
	autopinDuplicate = "duplicate"  // the same message delivered again
	autopinClosing   = "closing"    // the bot was shutting down
	autopinBusy      = "busy"       // too many under way: dropped
	autopinIgnored   = "ignored"    // no active rule, a bot, no picture, auto-pin off
	autopinRelink    = "relink"     // the account must be linked again
	autopinRemoved   = "rule_gone"  // the rule was removed or paused before it ran
	autopinNoAccess  = "no_access"  // the owner may no longer read the channel
	autopinNotServed = "not_served" // its shard is no longer this member's
)

// autopinState is what auto-pin keeps. Its zero value is ready.
type autopinState struct {
	// guilds are the servers' rules, by channel, as last read.
	guilds guildCache[map[snowflake.ID]links.AutopinRule, discordio.Message]

	mu sync.Mutex
	// lanes holds, per channel, the messages waiting to be worked on, in
	// order; a key is present while a goroutine works on them.
	lanes map[snowflake.ID][]discordio.Message
	// recent is when each message was last filed (see recentFor).
	recent map[snowflake.ID]time.Time
	// access is what was found of each rule owner's access to their
	// channel, trusted for guildCacheFor (see ownerMayRead).
	access map[accessKey]accessSeen

	// onDone, when set (tests), learns the end of every message handed
	// over, with its result (autopinIgnored included).
	onDone func(discordio.Message, string)
}

// accessKey is a rule's owner in its channel.
type accessKey struct{ user, channel snowflake.ID }

// accessSeen is whether the owner could read the channel, until when.
type accessSeen struct {
	ok    bool
	until time.Time
}

// autopinGateway makes the gateway hand guild messages to the bot, unless
// Config.NoAutopin.
func (b *Bot) autopinGateway(cfg *discordio.GatewayConfig) {
	if !b.cfg.NoAutopin {
		cfg.OnMessage = b.HandleMessage
	}
}

// HandleMessage takes a MESSAGE_CREATE, MESSAGE_UPDATE or MESSAGE_DELETE
// from the gateway and returns at once: a new or edited message of a
// channel with an active auto-pin rule, by a member who is not a bot, and
// a deleted one of a channel with a rule or whose pin reaction ran lately
// (autopin_events.go), is worked on on a goroutine, after the earlier
// events of its channel; every other one is dropped. It never waits for
// the store.
func (b *Bot) HandleMessage(m discordio.Message) {
	if b.cfg.NoAutopin || m.GuildID == 0 ||
		(m.Kind != discordio.MessageDeleted && (m.Bot || m.AuthorID == b.appID || (m.Shown && !m.Images))) {
		b.autopinDone(m, autopinIgnored)
		return
	}
	judgeGuild[map[snowflake.ID]links.AutopinRule, discordio.Message](b, &b.autopin.guilds, m.GuildID, m, messageEvents{b})
}

// messageEvents judges messages by their server's auto-pin rules.
type messageEvents struct{ b *Bot }

func (messageEvents) what() string { return "auto-pin rules" }

func (k messageEvents) judge(rules map[snowflake.ID]links.AutopinRule, m discordio.Message) {
	k.b.judgeMessage(rules, m)
}

func (k messageEvents) refuse(m discordio.Message, busy bool) {
	if busy {
		k.b.autopinDone(m, autopinBusy)
	} else {
		k.b.autopinDone(m, autopinClosing)
	}
}

// read reads the rules of guild, by channel.
func (k messageEvents) read(ctx context.Context, guild snowflake.ID) (map[snowflake.ID]links.AutopinRule, error) {
	rules, err := k.b.cfg.Links.AutopinRules(ctx, guild.String())
	if err != nil {
		return nil, err
	}
	return rulesByChannel(rules), nil
}

// judgeMessage files m in its channel's lane if rules give the channel
// an active rule, or, for a delete, any rule or a pin reaction on the
// message lately; otherwise m is ignored.
func (b *Bot) judgeMessage(rules map[snowflake.ID]links.AutopinRule, m discordio.Message) {
	r, ok := rules[m.ChannelID]
	if m.Kind == discordio.MessageDeleted {
		ok = ok || b.reactions.hasPinned(m.MessageID, b.cfg.Now())
	} else {
		ok = ok && !r.Paused
	}
	if !ok {
		b.autopinDone(m, autopinIgnored)
		return
	}
	ap := &b.autopin
	ap.mu.Lock()
	b.fileMessageLocked(m, b.cfg.Now())
	ap.mu.Unlock()
}

// rulesByChannel indexes rules by channel; a rule whose channel is not a
// snowflake (never stored by the bot) is left out.
func rulesByChannel(rules []links.AutopinRule) map[snowflake.ID]links.AutopinRule {
	out := make(map[snowflake.ID]links.AutopinRule, len(rules))
	for _, r := range rules {
		if id, err := snowflake.Parse(r.Channel); err == nil {
			out[id] = r
		}
	}
	return out
}

// putRules records the rules of guild that /autopin just stored.
func (ap *autopinState) putRules(guild snowflake.ID, rules []links.AutopinRule, now time.Time) {
	ap.guilds.put(guild, rulesByChannel(rules), now)
}

// ruleOf returns the rule of channel as last read or set.
func (ap *autopinState) ruleOf(guild, channel snowflake.ID) (links.AutopinRule, bool) {
	rules, _ := ap.guilds.value(guild)
	r, ok := rules[channel]
	return r, ok
}

// fileMessageLocked files m, an event of an active rule's channel (or a
// delete: see judgeMessage), in its channel's lane, unless it is a new
// message filed within recentFor (a shard's RESUME replays events; an
// edit or a delete worked on twice does nothing more). ap.mu is held;
// the results of refused messages are reported on a goroutine, as onDone
// may take ap.mu's callers' time.
func (b *Bot) fileMessageLocked(m discordio.Message, now time.Time) {
	ap := &b.autopin
	if at, ok := ap.recent[m.MessageID]; ok && m.Kind == discordio.MessageCreated && now.Sub(at) < recentFor {
		go b.autopinDone(m, autopinDuplicate)
		return
	}
	if ap.recent == nil {
		ap.recent = make(map[snowflake.ID]time.Time)
	}
	if len(ap.recent) >= maxRecentEvents {
		for id, at := range ap.recent {
			if now.Sub(at) >= recentFor {
				delete(ap.recent, id)
			}
		}
		if len(ap.recent) >= maxRecentEvents {
			// A flood: forget them all. A message delivered again then
			// reaches the batch, whose history skips what was pinned.
			clear(ap.recent)
		}
	}
	if ap.lanes == nil {
		ap.lanes = make(map[snowflake.ID][]discordio.Message)
	}
	q, running := ap.lanes[m.ChannelID]
	if (!running && len(ap.lanes) >= maxAutopinLanes) || len(q) >= maxAutopinLane {
		b.log.Warn().Str("guild_id", m.GuildID.String()).Str("channel_id", m.ChannelID.String()).Str("message_id", m.MessageID.String()).
			Msg("auto-pin message dropped: too many under way")
		go b.autopinDone(m, autopinBusy)
		return
	}
	if m.Kind == discordio.MessageCreated {
		ap.recent[m.MessageID] = now
	}
	ap.lanes[m.ChannelID] = append(q, m)
	if running {
		return
	}
	if !b.enter() {
		delete(ap.lanes, m.ChannelID)
		go b.autopinDone(m, autopinClosing)
		return
	}
	go b.runAutopinLane(m.ChannelID)
}

// runAutopinLane works on the messages of channel in order until none is
// left.
func (b *Bot) runAutopinLane(channel snowflake.ID) {
	defer b.leave()
	ap := &b.autopin
	for {
		ap.mu.Lock()
		q := ap.lanes[channel]
		if len(q) == 0 {
			delete(ap.lanes, channel)
			ap.mu.Unlock()
			return
		}
		m := q[0]
		ap.lanes[channel] = q[1:]
		ap.mu.Unlock()
		b.autopinDone(m, b.laneEvent(m))
	}
}

// autopinDone reports what became of a message.
func (b *Bot) autopinDone(m discordio.Message, result string) {
	if f := b.autopin.onDone; f != nil {
		f(m, result)
	}
}

// autopinMessage queues the pictures of m, a new or edited message, on a
// worker, under the rule of its channel as it stands now, and returns its
// result. Of an edited message, only the pictures neither queued nor
// pinned before are queued. A channel the rule's owner or Pinbot can no
// longer read pauses itself.
func (b *Bot) autopinMessage(m discordio.Message) string {
	rule, ok := b.autopin.ruleOf(m.GuildID, m.ChannelID)
	if !ok || rule.Paused {
		return autopinRemoved
	}
	owner, err := snowflake.Parse(rule.Owner)
	if err != nil {
		b.log.Error().Str("guild_id", m.GuildID.String()).Str("channel_id", m.ChannelID.String()).Msg("auto-pin rule with an unreadable owner; message not queued")
		return autopinFailed
	}
	ctx := logctx.With(b.workCtx, "user_id", rule.Owner)
	ctx = logctx.With(ctx, "guild_id", m.GuildID.String())
	ctx = logctx.With(ctx, "channel_id", m.ChannelID.String())
	ctx = logctx.With(ctx, "message_id", m.MessageID.String())
	release, ok := b.onWorker()
	if !ok {
		b.logger(ctx).Info().Msg("auto-pin message not worked on: closing")
		return autopinClosing
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, b.cfg.HandlerTimeout)
	defer cancel()
	inv := invocation{ctx: ctx, userID: owner, guildID: m.GuildID, channelID: m.ChannelID, log: *b.logger(ctx)}

	msg, reason := b.fetchMessage(ctx, m.ChannelID, m.MessageID)
	if reason == failNoAccess {
		inv.log.Info().Msg("auto-pin: Pinbot may no longer read the channel; message not queued")
		if b.pauseLost(ctx, m.GuildID, m.ChannelID, owner, rule.Account, whyBotLost) {
			return autopinPaused
		}
		return autopinNoAccess
	}
	if reason != "" {
		inv.log.Info().Str("reason", reason).Msg("auto-pin: the message could not be read")
		return autopinFailed
	}
	if msg.ChannelID == 0 {
		msg.ChannelID = m.ChannelID
	}
	if msg.Author.Bot || msg.WebhookID != nil {
		// An update may not say who wrote the message.
		return autopinIgnored
	}
	imgs := imagesOf(*msg)
	if len(imgs) == 0 {
		return autopinNoImage
	}
	if ok, err := b.ownerMayRead(inv); err != nil {
		inv.log.Warn().Str("error", errText(err)).Msg("auto-pin: the owner's access to the channel could not be checked; message not queued")
		return autopinFailed
	} else if !ok {
		inv.log.Info().Msg("auto-pin: the rule's owner may no longer read the channel; message not queued")
		if b.pauseLost(ctx, m.GuildID, m.ChannelID, owner, rule.Account, whyOwnerLost) {
			return autopinPaused
		}
		return autopinNoAccess
	}
	accounts, err := b.cfg.Links.Accounts(ctx, rule.Owner)
	if err != nil {
		inv.log.Error().Err(err).Msg("auto-pin: reading the owner's links failed; message not queued")
		return autopinFailed
	}
	if !slices.ContainsFunc(accounts, func(a links.Account) bool { return a.ID == rule.Account }) {
		inv.log.Info().Str("account", rule.Account).Msg("auto-pin: the rule's account is no longer its owner's; message not queued")
		return autopinUnlinked
	}
	acct, err := b.cfg.Links.Account(ctx, rule.Account)
	if err != nil {
		inv.log.Error().Err(err).Str("account", rule.Account).Msg("auto-pin: reading the account failed; message not queued")
		return autopinFailed
	}
	if acct.ID == "" {
		acct.ID = rule.Account
	}
	if acct.RelinkNeeded {
		inv.log.Info().Str("account", acct.ID).Msg("auto-pin: the account must be linked again; message not queued")
		return autopinRelink
	}
	var skip []string
	if m.Kind == discordio.MessageUpdated || m.Replayed {
		// An edit queues its new pictures only; a replayed message, what
		// the shard's previous holder had not queued before it died.
		if skip, err = b.alreadyThere(ctx, acct.ID, rule.Board, m.MessageID, imgs); err != nil {
			inv.log.Error().Err(err).Str("account", acct.ID).Bool("replayed", m.Replayed).Msg("auto-pin: reading the account's queued pins failed; message not queued")
			return autopinFailed
		}
		switch {
		case len(skip) == len(imgs) && m.Kind == discordio.MessageUpdated:
			inv.log.Debug().Msg("auto-pin: edited message with no new picture")
			return autopinUnchanged
		case len(skip) == len(imgs):
			inv.log.Debug().Msg("auto-pin: replayed message already queued")
			return autopinDuplicate
		case len(skip) == 0 && m.Kind == discordio.MessageUpdated && b.cfg.Now().Sub(m.MessageID.Time()) >= recentFor:
			inv.log.Debug().Msg("auto-pin: edit of an old message none of whose pictures was taken; not queued")
			return autopinOld
		}
	}
	if !b.servesGuild(m.GuildID) {
		inv.log.Info().Msg("auto-pin: the message's shard is no longer this member's; its next holder gets it replayed")
		// Not worked on: a delivery again is not a duplicate.
		b.autopin.mu.Lock()
		delete(b.autopin.recent, m.MessageID)
		b.autopin.mu.Unlock()
		return autopinNotServed
	}
	ref := messageRef{GuildID: m.GuildID, ChannelID: m.ChannelID, MessageID: m.MessageID, Raw: m.MessageID.String()}
	bt := batch{source: sourceAutopin, refs: []messageRef{ref}, target: msg, boardID: rule.Board, boardName: rule.BoardName, queueAll: true, skip: skip}
	var r reply
	if !b.serves(acct.ID) {
		r = b.forwardPin(inv, acct.ID, bt)
	}
	if r.content == "" {
		r = b.pinFor(inv, acct, bt)
	}
	inv.log.Info().Str("account", acct.ID).Str("report", r.content).Msg("auto-pin message worked on")
	return autopinQueued
}

// ownerMayRead reports whether inv's user, a rule's owner, may still view
// inv's channel and read its history: the pins are theirs, as if they
// ran /pin there. What was found is trusted for guildCacheFor, so that a
// busy channel costs the check once a minute; the queued pins check
// again when they run.
func (b *Bot) ownerMayRead(inv invocation) (bool, error) {
	ap := &b.autopin
	k := accessKey{inv.userID, inv.channelID}
	now := b.cfg.Now()
	ap.mu.Lock()
	seen, ok := ap.access[k]
	ap.mu.Unlock()
	if ok && now.Before(seen.until) {
		return seen.ok, nil
	}
	ac := &accessChecker{api: b.api, ctx: inv.ctx, guildID: inv.guildID, userID: inv.userID}
	res, err := ac.canRead(inv.channelID)
	if err != nil {
		return false, err
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if ap.access == nil {
		ap.access = make(map[accessKey]accessSeen)
	}
	if len(ap.access) >= maxAutopinLanes {
		for key, s := range ap.access {
			if !now.Before(s.until) {
				delete(ap.access, key)
			}
		}
		if len(ap.access) >= maxAutopinLanes {
			clear(ap.access)
		}
	}
	ap.access[k] = accessSeen{ok: res.ok, until: now.Add(guildCacheFor)}
	return res.ok, nil
}
