package digest

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/internal/limit/schedule"
)

// paceGroup is the runner's group every request of a Sender passes
// first, under Config.Pace.
const paceGroup = "digest"

// channelGroup is the runner's group of the messages sent to a channel,
// under Config.Channel.
func channelGroup(id snowflake.ID) string { return "channel:" + id.String() }

// delivery is a digest under way: its messages, sent one after the
// other to the user's DM channel or, once that refused, each line to the
// channel where its command ran, channel by channel, each checked first.
// One request of a delivery is under way at a time, so its messages
// arrive in order. Its fields are guarded by Sender.mu.
type delivery struct {
	u        *user
	msgs     []message    // composed for the current destination
	next     int          // the message to send
	dm       snowflake.ID // the user's DM channel, once known
	fallback bool         // the DMs refused: the lines go to their channels
	groups   []group      // fallback: the channels still to go to
	cur      group        // fallback: the channel being checked or sent to
	tries    int          // failed tries of the current request
}

// message is a composed message and the lines it carries: those it
// lists, and those it counts in its "… and K more".
type message struct {
	text  string
	items []item
}

// group is the lines of a digest for one channel where their commands
// ran.
type group struct {
	guild, channel snowflake.ID
	items          []item
}

// dest returns the channel d's next message goes to.
func (d *delivery) dest() snowflake.ID {
	if d.fallback {
		return d.cur.channel
	}
	return d.dm
}

// op is a request of a delivery.
type op uint8

const (
	opOpenDM op = iota // POST /users/@me/channels
	opSend             // POST /channels/{id}/messages
	opCheck            // Access.CanRead of the user and a fallback channel
)

// step is a request in the runner: first in paceGroup, then (a message)
// in its channel's group.
type step struct {
	d     *delivery
	op    op
	paced bool // past paceGroup
}

// composeLocked returns the messages of a digest of items: those with a
// text listed, the others counted. The caller holds s.mu.
func (s *Sender) composeLocked(items []item) []message {
	var listed, others []item
	for _, it := range items {
		if it.text == "" {
			others = append(others, it)
		} else {
			listed = append(listed, it)
		}
	}
	texts := make([]string, len(listed))
	for i, it := range listed {
		texts[i] = it.text
	}
	chunks := compose(s.cfg.Header, texts, len(others), maxContent-fallbackRoom)
	msgs := make([]message, len(chunks))
	i := 0
	for k, c := range chunks {
		msgs[k] = message{text: c.text, items: listed[i : i+c.lines : i+c.lines]}
		i += c.lines
		if c.more {
			msgs[k].items = append(msgs[k].items, others...)
		}
	}
	return msgs
}

// startLocked composes the digest of u's gathered lines and starts
// sending it. The caller holds s.mu.
func (s *Sender) startLocked(u *user, now time.Time) {
	if len(u.lines) == 0 && len(u.more) == 0 {
		s.forgetLocked(u)
		return
	}
	if len(u.more) > 0 {
		s.log.Info().Str("user", u.id.String()).Int("lines", len(u.lines)).Int("dropped", len(u.more)).
			Msg("digest over its line limit: the rest is counted, not listed")
	}
	d := &delivery{u: u, msgs: s.composeLocked(slices.Concat(u.lines, u.more))}
	u.lines, u.more, u.due, u.active = nil, nil, time.Time{}, d
	s.stats.Digests++
	s.advanceLocked(d, now)
}

// advanceLocked submits d's next request: opening the DM channel when it
// is not known, else the next message; once the DMs refused, checking
// the next channel, then its messages; or ends d when nothing is left.
// The caller holds s.mu.
func (s *Sender) advanceLocked(d *delivery, now time.Time) {
	for d.next == len(d.msgs) {
		if !d.fallback || len(d.groups) == 0 {
			s.finishLocked(d, now)
			return
		}
		d.cur, d.groups = d.groups[0], d.groups[1:]
		d.msgs, d.next, d.tries = nil, 0, 0
		switch {
		case d.cur.channel == 0 || d.cur.guild == 0:
			s.withholdLocked(d, "the command's channel is not known")
		case s.access == nil:
			s.withholdLocked(d, "no one checks who may read the channel")
		default:
			s.submitLocked(step{d: d, op: opCheck})
			return
		}
	}
	if !d.fallback {
		if until, ok := s.closedDMs.get(d.u.id); ok && now.Before(until) {
			s.toChannelsLocked(d, now)
			return
		}
		if d.dm == 0 {
			if id, ok := s.dmChans.get(d.u.id); ok {
				d.dm = id
			} else {
				s.submitLocked(step{d: d, op: opOpenDM})
				return
			}
		}
	}
	s.submitLocked(step{d: d, op: opSend})
}

// toChannelsLocked sends what d has not sent by DM to the channels where
// its lines' commands ran: one group per channel, in the order of their
// first line. The caller holds s.mu.
func (s *Sender) toChannelsLocked(d *delivery, now time.Time) {
	var groups []group
	at := make(map[[2]snowflake.ID]int)
	for _, m := range d.msgs[d.next:] {
		for _, it := range m.items {
			k := [2]snowflake.ID{it.guild, it.channel}
			i, ok := at[k]
			if !ok {
				i = len(groups)
				at[k] = i
				groups = append(groups, group{guild: it.guild, channel: it.channel})
			}
			groups[i].items = append(groups[i].items, it)
		}
	}
	d.fallback, d.groups, d.msgs, d.next, d.tries = true, groups, nil, 0, 0
	s.advanceLocked(d, now)
}

// submitLocked queues st in the runner: in paceGroup, or in its
// channel's group once paced. The caller holds s.mu.
func (s *Sender) submitLocked(st step) {
	group, rule := paceGroup, s.cfg.Pace
	if st.paced {
		group, rule = channelGroup(st.d.dest()), s.cfg.Channel
	}
	s.nextJob++
	id := s.nextJob
	at, err := s.runner.Submit(group, rule, id, st)
	if err != nil {
		// Not expected: groups keep one rule, and job IDs are fresh.
		s.giveUpLocked(st.d, s.clock.Now(), "the scheduler refused the message", err, false)
		return
	}
	s.queued[id] = at
}

// handle is the runner's handler: a request's turn has come in its
// group. Called on the runner's goroutine.
func (s *Sender) handle(j schedule.Job[step]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	delete(s.queued, j.ID)
	if s.stopped {
		return
	}
	st := j.Value
	if st.op == opSend && !st.paced {
		st.paced = true
		s.submitLocked(st)
		return
	}
	s.requestLocked(st)
}

// answer is what a request of a delivery found out.
type answer struct {
	dm      snowflake.ID // opOpenDM: the DM channel
	allowed bool         // opCheck: the user may read the channel
}

// requestLocked sends st's request on a goroutine of its own, bounded by
// Config.SendTimeout, and hands its outcome to resultLocked. The caller
// holds s.mu.
func (s *Sender) requestLocked(st step) {
	d := st.d
	userID, dest, guild := d.u.id, d.dest(), d.cur.guild
	var content string
	if st.op == opSend {
		content = d.msgs[d.next].text
		if d.fallback {
			content = fallbackPrefix(userID) + content
		}
	}
	s.inflight++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.SendTimeout)
		var (
			ans answer
			err error
		)
		switch st.op {
		case opOpenDM:
			var ch snowflake.ID
			if ch, err = s.api.OpenDM(ctx, userID); err == nil {
				if ch == 0 {
					err = errors.New("digest: Discord answered no DM channel")
				} else {
					ans.dm = ch
				}
			}
		case opSend:
			err = s.api.Send(ctx, dest, discord.MessageCreate{Content: content, AllowedMentions: &noMentions})
		case opCheck:
			ans.allowed, err = s.access.CanRead(ctx, guild, dest, userID)
		}
		cancel()

		s.mu.Lock()
		defer s.mu.Unlock()
		s.inflight--
		defer s.notifyLocked()
		if s.stopped {
			return
		}
		s.resultLocked(st, ans, err)
	}()
}

// resultLocked moves d on after a request's outcome. The caller holds
// s.mu.
func (s *Sender) resultLocked(st step, ans answer, err error) {
	d := st.d
	now := s.clock.Now()
	o, wait := classify(err)
	if st.op == opCheck && o != done && o != rateLimited {
		// Not knowing is never a "no": ask again later.
		o, wait = failed, 0
	}
	if o == rateLimited {
		s.stats.RateLimited++
	}
	if o == rateLimited || o == failed {
		s.retryLocked(st, o, wait, err, now)
		return
	}
	switch st.op {
	case opOpenDM:
		if o != done {
			// Discord will not open a DM channel with the user.
			s.dmsClosedLocked(d, now, err)
			return
		}
		s.dmChans.put(d.u.id, ans.dm)
		d.dm, d.tries = ans.dm, 0
		s.advanceLocked(d, now)
		return
	case opCheck:
		d.tries = 0
		if ans.allowed {
			d.msgs, d.next = s.composeLocked(d.cur.items), 0
		} else {
			s.withholdLocked(d, "the user may not read that channel")
		}
		s.advanceLocked(d, now)
		return
	}
	switch {
	case o == done:
		s.stats.Messages++
		if d.fallback {
			s.stats.Fallbacks++
		}
		s.settleLocked(d.msgs[d.next].items, settleSent)
		d.next++
		d.tries = 0
		s.advanceLocked(d, now)
	case !d.fallback && o == dmsClosed:
		s.dmsClosedLocked(d, now, err)
	case !d.fallback && o == refused:
		// The DM channel is gone or unusable: open it again next time.
		s.dmChans.remove(d.u.id)
		s.log.Info().Str("user", d.u.id.String()).Str("error", err.Error()).Msg("DM channel refused a digest; using the channels where the commands ran")
		s.toChannelsLocked(d, now)
	case o == invalid:
		s.stats.DroppedMessages++
		s.log.Error().Str("user", d.u.id.String()).Str("channel", d.dest().String()).Str("error", err.Error()).
			Msg("Discord refused a digest message; it is dropped")
		s.settleLocked(d.msgs[d.next].items, settleRefused)
		d.next++
		d.tries = 0
		s.advanceLocked(d, now)
	default: // refused by the channel where the commands ran
		s.giveUpLocked(d, now, "the fallback channel refused it", err, true)
	}
}

// dmsClosedLocked remembers for Config.DMsClosedFor that the user of d
// accepts no DM, and sends the rest of d to the channels where its
// commands ran. The caller holds s.mu.
func (s *Sender) dmsClosedLocked(d *delivery, now time.Time, err error) {
	s.closedDMs.put(d.u.id, now.Add(s.cfg.DMsClosedFor))
	s.log.Info().Str("user", d.u.id.String()).Str("error", err.Error()).Msg("user's DMs are closed; digests go to the channels where the commands ran")
	s.toChannelsLocked(d, now)
}

// retryLocked tries st again after wait (a 429's retry_after) or after
// the backoff of its tries so far, or gives up after Config.Attempts
// tries. The caller holds s.mu.
func (s *Sender) retryLocked(st step, o outcome, wait time.Duration, err error, now time.Time) {
	d := st.d
	d.tries++
	if d.tries >= s.cfg.Attempts {
		s.giveUpLocked(d, now, "every try failed", err, false)
		return
	}
	if o != rateLimited {
		wait = s.backoff(d.tries)
	}
	s.stats.Retries++
	s.log.Debug().Str("user", d.u.id.String()).Stringer("outcome", o).Dur("wait", wait).Str("error", err.Error()).
		Msg("digest request to be tried again")
	s.alarmLocked(now.Add(wait), func(time.Time) { s.submitLocked(step{d: d, op: st.op}) })
}

// backoff returns the wait after the tries-th failed try: Config.Backoff
// doubled for each try after the first, at most Config.MaxBackoff.
func (s *Sender) backoff(tries int) time.Duration {
	w := s.cfg.Backoff
	for i := 1; i < tries && w < s.cfg.MaxBackoff; i++ {
		w *= 2
	}
	return min(w, s.cfg.MaxBackoff)
}

// giveUpLocked gives up what d has not sent to its current destination:
// by DM, the whole digest; in a channel, that channel's lines, and d goes
// on with the next channel. forGood says the lines can never be sent
// (Discord refused them), so the Outbox forgets them too; otherwise they
// stay in it for the next Resume. The caller holds s.mu.
func (s *Sender) giveUpLocked(d *delivery, now time.Time, why string, err error, forGood bool) {
	var items []item
	n := len(d.msgs) - d.next
	for _, m := range d.msgs[d.next:] {
		items = append(items, m.items...)
	}
	if d.fallback && d.msgs == nil {
		// The channel's check failed: nothing was composed yet.
		items = d.cur.items
		s.stats.DroppedLines += int64(len(items))
	}
	s.stats.DroppedMessages += int64(n)
	ev := s.log.Warn().Str("user", d.u.id.String()).Int("messages", n).Int("lines", len(items)).Str("reason", why)
	if d.fallback {
		ev = ev.Str("fallback_channel", d.cur.channel.String())
	}
	if err != nil {
		ev = ev.Str("error", err.Error())
	}
	ev.Msg("digest dropped; its results remain in /queue")
	how := settleLater
	if forGood {
		how = settleRefused
	}
	s.settleLocked(items, how)
	d.msgs, d.next, d.cur = nil, 0, group{}
	if !d.fallback {
		d.groups = nil
	}
	s.advanceLocked(d, now)
}

// withholdLocked does not post the lines of d's current channel there,
// and says why: they remain in /queue, and the Outbox forgets them (the
// next run would find the same). The caller holds s.mu.
func (s *Sender) withholdLocked(d *delivery, why string) {
	items := d.cur.items
	s.stats.Withheld += int64(len(items))
	s.log.Info().Str("user", d.u.id.String()).Str("channel", d.cur.channel.String()).Str("guild", d.cur.guild.String()).
		Int("lines", len(items)).Str("reason", why).
		Msg("digest not posted in the channel where the commands ran, the user's DMs closed; its results remain in /queue")
	s.settleLocked(items, settleRefused)
	d.msgs, d.next, d.cur = nil, 0, group{}
}

// How settleLocked is done with lines.
type settle uint8

const (
	settleSent    settle = iota // Discord accepted them
	settleRefused               // they can never be sent
	settleLater                 // passing failures: the next Resume tries again
)

// settleLocked is done with items in memory. Lines sent or refused for
// good leave the Outbox too; sent ones are remembered a while, so that a
// second report of the same result is not sent again. The caller holds
// s.mu.
func (s *Sender) settleLocked(items []item, how settle) {
	var keys []Key
	for _, it := range items {
		if it.key.IsZero() {
			continue
		}
		delete(s.keys, it.key)
		if how == settleSent {
			s.delivered.put(it.key, struct{}{})
		}
		keys = append(keys, it.key)
	}
	if how != settleLater {
		s.deleteLocked(keys)
	}
}

// finishLocked ends d: the user's next digest starts if it is due (or
// Close was called), and a user with nothing left is forgotten. The
// caller holds s.mu.
func (s *Sender) finishLocked(d *delivery, now time.Time) {
	u := d.u
	u.active = nil
	if len(u.lines) == 0 && len(u.more) == 0 {
		s.forgetLocked(u)
		return
	}
	if s.closing || !u.due.After(now) {
		s.startLocked(u, now)
	}
}

// forgetLocked drops u, which has nothing gathered or under way. The
// caller holds s.mu.
func (s *Sender) forgetLocked(u *user) {
	delete(s.users, u.id)
	if s.overflow > 0 {
		s.log.Warn().Int64("lines", s.overflow).Int("max_users", s.cfg.MaxUsers).
			Msg("result lines dropped while too many users waited for a digest")
		s.overflow = 0
	}
}
