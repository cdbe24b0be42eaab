package bot

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/internal/logctx"
)

// Pin reactions. A linked user who reacts to a guild message with the pin
// emoji (the server's, chosen with /server; otherwise Config.PinEmoji, 📌
// unless set) pins its pictures, as "Pin to Pinterest" does: the user's
// active account and default board, their when_full choice, at most
// MaxPinsPerBatch pictures, "already pinned" for what the board has, and,
// in a cluster, on the account's owner.
// There is no interaction to answer: the report goes to the user by DM,
// or, when their DMs are closed, to the channel, mentioning them without
// a ping. Taking the reaction off before a queued pin of the message ran
// cancels the waiting pins of that message the user queued. Editing the
// message does nothing (the reaction pinned what it had); deleting it
// cancels its waiting pins, when auto-pin is on (its MESSAGE_DELETE
// comes with the guild messages intent: see autopin_events.go). A user
// with no linked account gets one DM a day at most about /link.
//
// The gateway hands each reaction over on its reading goroutine
// (HandleReaction), which only files it: the events of one user on one
// message are worked on in the order they came (a removal after the add
// it undoes), each on a worker (Config.Workers, shared with
// interactions), charged to the user's allowance as "Pin to Pinterest"
// is. What is remembered of users and channels lives in memory, bounded
// (see the limits below): a restart forgets it.

// DefaultPinEmoji is the pin emoji when Config.PinEmoji is "".
const DefaultPinEmoji = "📌"

// Limits of what the reactions keep in memory.
const (
	// noticeEvery is how often, at most, a user who has linked no
	// account is told about /link after a pin reaction.
	noticeEvery = 24 * time.Hour
	// maxNoticeUsers bounds the users remembered as told. When it is
	// reached and none of them may be told again, no new user is told:
	// a missing notice is better than repeated ones.
	maxNoticeUsers = 10_000
	// channelReplyGap is how long, at least, separates two replies the
	// reactions post in one channel (for users whose DMs are closed),
	// below Discord's 5 messages per 5 seconds per channel, which the
	// digests share. A report the gap refuses goes to the user's digest,
	// which keeps that limit itself (package digest).
	channelReplyGap = 5 * time.Second
	// maxReplyChannels bounds the channels remembered for that gap.
	maxReplyChannels = 10_000
	// recentFor is how long a reaction event is remembered, so that the
	// same event delivered again (a shard's RESUME replays events) is
	// worked on once; maxRecentEvents bounds the events remembered.
	recentFor       = 10 * time.Minute
	maxRecentEvents = 10_000
	// maxReactionLanes bounds the users' messages whose reactions are
	// under way at once; a reaction beyond it is dropped, and logged.
	maxReactionLanes = 10_000
)

// The results of ReactionObserver.ReactionDone.
const (
	reactionRan       = "ran"        // a pin reaction's pictures went through the batch (PinDone counts them)
	reactionNotLinked = "not_linked" // the user has linked no account
	reactionCanceled  = "canceled"   // a removal canceled queued pins
	reactionNone      = "none"       // a removal found no queued pin to cancel
	reactionThrottled = "throttled"  // the user's allowance was used up
	reactionFailed    = "failed"     // the links or the message could not be read
	reactionDuplicate = "duplicate"  // the same event delivered again
	reactionClosing   = "closing"    // the bot was shutting down
	reactionBusy      = "busy"       // too many reactions under way: dropped
	reactionNotServed = "not_served" // its shard is no longer this member's
	// reactionIgnored is not reported: another emoji, a bot, a DM, or
	// reactions turned off.
	reactionIgnored = "ignored"
)

// reactionResults lists ReactionDone's results, for the metrics' check of
// their labels.
var reactionResults = []string{
	reactionRan, reactionNotLinked, reactionCanceled, reactionNone, reactionThrottled,
	reactionFailed, reactionDuplicate, reactionClosing, reactionBusy, reactionNotServed,
}

// ReactionObserver, when Config.Observer implements it too, learns what
// became of every pin reaction (result, one of a short fixed list: see
// reactionResults); the pictures a reaction pinned are reported by
// PinDone, as a command's. It must be cheap and must not block.
type ReactionObserver interface {
	ReactionDone(result string)
}

// ParsePinEmoji checks a pin emoji as Config.PinEmoji and PINBOT_PIN_EMOJI
// take it, a unicode emoji ("📌") or a custom emoji as name:id (or as
// Discord writes it in a message, <:name:id>), and returns it as
// Config.PinEmoji wants it: the unicode emoji, or name:id.
func ParsePinEmoji(s string) (string, error) {
	e, err := parsePinEmoji(s)
	if err != nil {
		return "", err
	}
	return e.String(), nil
}

// pinEmoji is the emoji a reaction must carry.
type pinEmoji struct {
	name string       // the unicode emoji, or the custom emoji's name
	id   snowflake.ID // a custom emoji's ID; 0 for a unicode one
}

// customEmoji matches a custom emoji as name:id, <:name:id> or, animated,
// <a:name:id>.
var customEmoji = regexp.MustCompile(`^(?:<a?:([A-Za-z0-9_]{2,32}):([0-9]{1,20})>|([A-Za-z0-9_]{2,32}):([0-9]{1,20}))$`)

func parsePinEmoji(s string) (pinEmoji, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return pinEmoji{name: DefaultPinEmoji}, nil
	}
	if m := customEmoji.FindStringSubmatch(s); m != nil {
		name, rawID := m[1]+m[3], m[2]+m[4] // one form matched
		if id, err := snowflake.Parse(rawID); err == nil && id != 0 {
			return pinEmoji{name: name, id: id}, nil
		}
	}
	if unicodeEmoji(s) {
		return pinEmoji{name: s}, nil
	}
	return pinEmoji{}, fmt.Errorf("%q is neither a unicode emoji, such as 📌, nor a custom emoji as name:id, such as pin:123456789012345678", s)
}

// unicodeEmoji reports whether s looks like one unicode emoji: at most 16
// code points of symbols, joiners, variation selectors, skin tones, tags
// and keycaps, at least one of them outside ASCII, and no letter, space
// or punctuation of ASCII.
func unicodeEmoji(s string) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > 16 {
		return false
	}
	pictograph := false
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			// Keycaps start with a digit, # or *.
			if !strings.ContainsRune("0123456789#*", r) {
				return false
			}
		case unicode.In(r, unicode.So, unicode.Sk, unicode.Po):
			pictograph = true
		case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
			pictograph = pictograph || r == '\u20e3' // a keycap
		default:
			return false
		}
	}
	return pictograph
}

// String is the emoji as Config.PinEmoji spells it.
func (e pinEmoji) String() string {
	if e.id != 0 {
		return e.name + ":" + e.id.String()
	}
	return e.name
}

// text is the emoji as a message shows it.
func (e pinEmoji) text() string {
	if e.id != 0 {
		return "<:" + e.name + ":" + e.id.String() + ">"
	}
	return e.name
}

// matches reports whether a reaction carries the emoji: a custom emoji by
// its ID (its name may change), a unicode one by its code points, a
// variation selector aside.
func (e pinEmoji) matches(r discordio.Reaction) bool {
	if e.id != 0 {
		return r.EmojiID == e.id
	}
	return r.EmojiID == 0 && withoutVS(r.Emoji) == withoutVS(e.name)
}

func withoutVS(s string) string { return strings.ReplaceAll(s, "\ufe0f", "") }

// reactionState is what the bot keeps of pin reactions. Its zero value is
// ready.
type reactionState struct {
	once  sync.Once
	emoji pinEmoji
	// guilds are the servers' own pin emojis (see server.go).
	guilds guildEmojis

	mu sync.Mutex
	// lanes holds, per user and message, the events waiting to be worked
	// on, in order; a key is present while a goroutine works on them.
	lanes map[laneKey][]discordio.Reaction
	// recent is the last event seen per user and message (see recentFor).
	recent map[laneKey]recentEvent
	// notices is when each user not linked was last told about /link.
	notices map[snowflake.ID]time.Time
	// replies is when a reply was last posted in each channel.
	replies map[snowflake.ID]time.Time
	// pinned are the messages whose pin reactions ran lately, so that
	// deleting one cancels its queued pins (autopin_events.go).
	pinned map[snowflake.ID]reacted

	// onDone, when set (tests), learns the end of every reaction handed
	// over, with its result (reactionIgnored included).
	onDone func(discordio.Reaction, string)
}

type laneKey struct{ user, message snowflake.ID }

type recentEvent struct {
	added bool
	at    time.Time
}

// pinEmoji is the bot's emoji of pin reactions, from a Config that
// Validate accepted: that of the servers that chose none.
func (b *Bot) pinEmoji() pinEmoji {
	rs := &b.reactions
	rs.once.Do(func() {
		rs.emoji, _ = parsePinEmoji(b.cfg.PinEmoji)
	})
	return rs.emoji
}

// reactionGateway makes the gateway hand reactions to the bot, unless
// Config.NoReactions: it then asks for no intent.
func (b *Bot) reactionGateway(cfg *discordio.GatewayConfig) {
	if !b.cfg.NoReactions {
		cfg.OnReaction = b.HandleReaction
	}
}

// HandleReaction takes a reaction from the gateway and returns at once:
// a pin reaction of a guild message (with its server's pin emoji), by a
// user who is not a bot, is worked on on a goroutine of its own, after
// the earlier events of the same user on the same message; every other
// one is ignored. It never waits for the store: see judgeReaction.
func (b *Bot) HandleReaction(r discordio.Reaction) {
	if b.cfg.NoReactions || r.GuildID == 0 || r.Bot || r.UserID == b.appID {
		b.reactionDone(r, reactionIgnored)
		return
	}
	b.judgeReaction(r)
}

// fileReaction files r, judged against emoji, its server's pin emoji: a
// pin reaction joins the events of its user on its message; any other
// is ignored.
func (b *Bot) fileReaction(r discordio.Reaction, emoji pinEmoji) {
	if !emoji.matches(r) {
		b.reactionDone(r, reactionIgnored)
		return
	}
	rs := &b.reactions
	k := laneKey{r.UserID, r.MessageID}
	rs.mu.Lock()
	if rs.seenLocked(k, r.Added, b.cfg.Now()) {
		rs.mu.Unlock()
		b.log.Debug().Str("user_id", r.UserID.String()).Str("message_id", r.MessageID.String()).Bool("added", r.Added).
			Msg("pin reaction delivered again; ignored")
		b.reactionDone(r, reactionDuplicate)
		return
	}
	if rs.lanes == nil {
		rs.lanes = make(map[laneKey][]discordio.Reaction)
	}
	q, running := rs.lanes[k]
	if !running && len(rs.lanes) >= maxReactionLanes {
		rs.mu.Unlock()
		b.log.Warn().Str("user_id", r.UserID.String()).Str("message_id", r.MessageID.String()).
			Msg("pin reaction dropped: too many reactions under way")
		b.reactionDone(r, reactionBusy)
		return
	}
	rs.lanes[k] = append(q, r)
	rs.mu.Unlock()
	if running {
		return
	}
	if !b.enter() {
		rs.mu.Lock()
		q := rs.lanes[k]
		delete(rs.lanes, k)
		rs.mu.Unlock()
		for _, r := range q {
			b.reactionDone(r, reactionClosing)
		}
		return
	}
	go b.runLane(k)
}

// seenLocked reports whether an event (added or removed) of k repeats
// the last one seen within recentFor, and records it otherwise. rs.mu is
// held.
func (rs *reactionState) seenLocked(k laneKey, added bool, now time.Time) bool {
	prev, ok := rs.recent[k]
	if ok && prev.added == added && now.Sub(prev.at) < recentFor {
		return true
	}
	if rs.recent == nil {
		rs.recent = make(map[laneKey]recentEvent)
	}
	if !ok && len(rs.recent) >= maxRecentEvents {
		for key, e := range rs.recent {
			if now.Sub(e.at) >= recentFor {
				delete(rs.recent, key)
			}
		}
		if len(rs.recent) >= maxRecentEvents {
			// A flood: forget them all. A repeated add then reaches the
			// batch, whose history answers "already pinned".
			clear(rs.recent)
		}
	}
	rs.recent[k] = recentEvent{added: added, at: now}
	return false
}

// runLane works on k's events in order until none is left.
func (b *Bot) runLane(k laneKey) {
	defer b.leave()
	rs := &b.reactions
	for {
		rs.mu.Lock()
		q := rs.lanes[k]
		if len(q) == 0 {
			delete(rs.lanes, k)
			rs.mu.Unlock()
			return
		}
		r := q[0]
		rs.lanes[k] = q[1:]
		rs.mu.Unlock()
		b.reactionDone(r, b.reaction(r))
	}
}

// reactionDone reports what became of a reaction.
func (b *Bot) reactionDone(r discordio.Reaction, result string) {
	if o, ok := b.cfg.Observer.(ReactionObserver); ok && result != reactionIgnored {
		o.ReactionDone(result)
	}
	if f := b.reactions.onDone; f != nil {
		f(r, result)
	}
}

// reaction works on one pin reaction, on a worker, and returns its
// result.
func (b *Bot) reaction(r discordio.Reaction) string {
	ctx := logctx.With(b.workCtx, "user_id", r.UserID.String())
	ctx = logctx.With(ctx, "guild_id", r.GuildID.String())
	ctx = logctx.With(ctx, "channel_id", r.ChannelID.String())
	ctx = logctx.With(ctx, "message_id", r.MessageID.String())
	select {
	case b.workers <- struct{}{}:
		defer func() { <-b.workers }()
	case <-b.closingCh:
	}
	if b.isClosing() {
		b.logger(ctx).Info().Bool("added", r.Added).Msg("pin reaction not worked on: closing")
		return reactionClosing
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.HandlerTimeout)
	defer cancel()
	inv := invocation{ctx: ctx, userID: r.UserID, guildID: r.GuildID, channelID: r.ChannelID, log: *b.logger(ctx)}
	if r.Added {
		return b.pinReaction(inv, r)
	}
	return b.unpinReaction(inv, r)
}

// pinReaction pins the pictures of the message a user reacted to.
func (b *Bot) pinReaction(inv invocation, r discordio.Reaction) string {
	emoji := b.emojiOf(r.GuildID)
	u, err := b.cfg.Links.User(inv.ctx, r.UserID.String())
	if err != nil {
		inv.log.Error().Err(err).Msg("reading the user's links failed")
		b.answerReaction(inv, msgLinksUnavailable)
		return reactionFailed
	}
	if len(u.Accounts) == 0 {
		b.noticeUnlinked(inv, emoji)
		return reactionNotLinked
	}
	ref := messageRef{GuildID: r.GuildID, ChannelID: r.ChannelID, MessageID: r.MessageID, Raw: r.MessageID.String()}
	msg, reason := b.fetchMessage(inv.ctx, r.ChannelID, r.MessageID)
	if reason != "" {
		inv.log.Info().Str("reason", reason).Msg("pin reaction: the message could not be read")
		b.answerReaction(inv, msgReactionUnreadable(emoji.text(), ref.jumpURL(), reason))
		return reactionFailed
	}
	if msg.ChannelID == 0 {
		msg.ChannelID = r.ChannelID
	}
	var skip []string
	if r.Replayed {
		// The shard's previous holder may have run it before it died.
		acct, refusal := b.activeAccount(inv.ctx, r.UserID.String())
		if imgs := imagesOf(*msg); refusal == "" && !acct.RelinkNeeded && len(imgs) > 0 {
			if skip, err = b.alreadyThere(inv.ctx, acct.ID, acct.DefaultBoard, r.MessageID, imgs); err != nil {
				inv.log.Error().Err(err).Str("account", acct.ID).Msg("pin reaction replayed: reading the account's queued pins failed")
				b.answerReaction(inv, msgLinksUnavailable)
				return reactionFailed
			}
			if len(skip) == len(imgs) {
				inv.log.Debug().Msg("pin reaction replayed: its pictures are already queued or pinned")
				return reactionDuplicate
			}
		}
	}
	if !b.servesGuild(r.GuildID) {
		inv.log.Info().Msg("pin reaction: its shard is no longer this member's; its next holder gets it replayed")
		// Not worked on: a delivery again is not a duplicate.
		b.reactions.mu.Lock()
		delete(b.reactions.recent, laneKey{r.UserID, r.MessageID})
		b.reactions.mu.Unlock()
		return reactionNotServed
	}
	if ok, at := b.throttle.charge(r.UserID, min(max(len(imagesOf(*msg)), 1), MaxPinsPerBatch)); !ok {
		inv.log.Info().Time("retry_at", at).Msg("pin reaction refused: the user's allowance is used up")
		b.answerReaction(inv, b.throttle.msgThrottled(at))
		return reactionThrottled
	}
	rep := b.runBatch(inv, batch{source: sourceReaction, refs: []messageRef{ref}, target: msg, skip: skip})
	b.reactions.notePinned(r.MessageID, r.UserID, b.cfg.Now())
	inv.log.Info().Msg("pin reaction worked on")
	b.answerReaction(inv, msgReactionReport(emoji.text(), ref.jumpURL(), rep.content))
	return reactionRan
}

// unpinReaction cancels the waiting pins of the message that the user
// queued, on each account they link: the reaction that queued them was
// taken off. Pins already made stay.
func (b *Bot) unpinReaction(inv invocation, r discordio.Reaction) string {
	u, err := b.cfg.Links.User(inv.ctx, r.UserID.String())
	if err != nil {
		inv.log.Error().Err(err).Msg("reading the user's links failed; queued pins of the message not canceled")
		return reactionFailed
	}
	canceled, failed := 0, false
	for _, account := range u.Accounts {
		js, _, err := b.accountJobs(inv.ctx, account)
		if err != nil {
			inv.log.Error().Err(err).Str("account", account).Msg("reading the account's queued pins failed")
			failed = true
			continue
		}
		var ids []uint64
		for _, j := range js {
			if q, err := decodeQueuedPin(j.Payload); err == nil && j.State == actors.JobWaiting &&
				q.User == r.UserID && q.Message == r.MessageID {
				ids = append(ids, j.ID)
			}
		}
		if len(ids) == 0 {
			continue
		}
		done, _, err := b.cancelJobs(inv.ctx, account, ids)
		if err != nil {
			inv.log.Error().Err(err).Str("account", account).Int("jobs", len(ids)).Msg("canceling queued pins failed")
			failed = true
			continue
		}
		inv.log.Info().Str("account", account).Int("jobs", len(done)).Msg("queued pins canceled: pin reaction removed")
		canceled += len(done)
	}
	ref := messageRef{GuildID: r.GuildID, ChannelID: r.ChannelID, MessageID: r.MessageID}
	emoji := b.emojiOf(r.GuildID)
	switch {
	case canceled > 0:
		b.answerReaction(inv, msgReactionCanceled(emoji.text(), ref.jumpURL(), canceled))
		return reactionCanceled
	case failed:
		b.answerReaction(inv, msgReactionCancelFailed(emoji.text(), ref.jumpURL()))
		return reactionFailed
	}
	return reactionNone
}

// noticeUnlinked tells a user who reacted with the pin emoji but linked
// no account about /link, once per noticeEvery at most. DMs closed: the
// user is not told at all.
func (b *Bot) noticeUnlinked(inv invocation, emoji pinEmoji) {
	if !b.reactions.noticeDue(inv.userID, b.cfg.Now()) {
		inv.log.Debug().Msg("pin reaction by a user with no linked account; told already")
		return
	}
	ctx, cancel := context.WithTimeout(logctx.Inherit(b.workCtx, inv.ctx), replyTimeout)
	defer cancel()
	if err := b.sendDM(ctx, inv.userID.String(), msgReactionNotLinked(emoji.text())); err != nil {
		inv.log.Info().Str("error", errText(err)).Msg("the /link notice of a pin reaction was not delivered")
		return
	}
	inv.log.Info().Msg("pin reaction by a user with no linked account: told about /link")
}

// noticeDue reports whether user may be told about /link at now, and if
// so records it.
func (rs *reactionState) noticeDue(user snowflake.ID, now time.Time) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if last, ok := rs.notices[user]; ok {
		if now.Sub(last) < noticeEvery {
			return false
		}
	} else if len(rs.notices) >= maxNoticeUsers {
		for id, at := range rs.notices {
			if now.Sub(at) >= noticeEvery {
				delete(rs.notices, id)
			}
		}
		if len(rs.notices) >= maxNoticeUsers {
			return false
		}
	}
	if rs.notices == nil {
		rs.notices = make(map[snowflake.ID]time.Time)
	}
	rs.notices[user] = now
	return true
}

// mayReply reports whether a reply may be posted in channel at now, and
// if so records it (see channelReplyGap).
func (rs *reactionState) mayReply(channel snowflake.ID, now time.Time) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if last, ok := rs.replies[channel]; ok {
		if now.Sub(last) < channelReplyGap {
			return false
		}
	} else if len(rs.replies) >= maxReplyChannels {
		for id, at := range rs.replies {
			if now.Sub(at) >= channelReplyGap {
				delete(rs.replies, id)
			}
		}
		if len(rs.replies) >= maxReplyChannels {
			return false
		}
	}
	if rs.replies == nil {
		rs.replies = make(map[snowflake.ID]time.Time)
	}
	rs.replies[channel] = now
	return true
}

// answerReaction tells the user what their reaction did: by DM; when
// their DMs are closed, in the channel of the message, mentioning them
// (no ping), unless a reply went there less than channelReplyGap ago;
// otherwise, and when the DM failed for another reason, through their
// digest, line by line (package digest: by DM, or in that channel at the
// pace it keeps).
func (b *Bot) answerReaction(inv invocation, text string) {
	ctx, cancel := context.WithTimeout(logctx.Inherit(b.workCtx, inv.ctx), replyTimeout)
	defer cancel()
	parts := splitMessage(text, maxMessageRunes)
	for i, part := range parts {
		err := b.sendDM(ctx, inv.userID.String(), part)
		if err == nil {
			continue
		}
		rest := strings.Join(parts[i:], "\n")
		if i == 0 && dmRefused(err) {
			b.replyInChannel(ctx, inv, rest)
			return
		}
		inv.log.Warn().Str("error", errText(err)).Msg("the answer to a pin reaction was not sent by DM; it goes to the user's digest")
		b.tellLines(inv, rest)
		return
	}
}

// replyInChannel posts text in the reaction's channel for a user whose
// DMs are closed.
func (b *Bot) replyInChannel(ctx context.Context, inv invocation, text string) {
	if !b.reactions.mayReply(inv.channelID, b.cfg.Now()) {
		inv.log.Info().Msg("DMs closed and the channel had a reply just now: the answer to a pin reaction goes to the user's digest")
		b.tellLines(inv, text)
		return
	}
	text = msgReactionChannelPrefix(inv.userID) + text
	for i, part := range splitMessage(text, maxMessageRunes) {
		if err := b.api.Send(ctx, inv.channelID, discord.MessageCreate{Content: part, AllowedMentions: &noMentions}); err != nil {
			inv.log.Warn().Str("error", errText(err)).Int("part", i+1).Msg("the answer to a pin reaction was not posted in the channel")
			return
		}
	}
	inv.log.Info().Msg("DMs closed: the answer to a pin reaction was posted in the channel")
}

// tellLines hands text to the user's digest, a line at a time.
func (b *Bot) tellLines(inv invocation, text string) {
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) != "" {
			b.tell(inv.userID, inv.guildID, inv.channelID, line)
		}
	}
}
