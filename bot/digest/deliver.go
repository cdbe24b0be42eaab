package digest

import (
	"context"
	"errors"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/rest"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors/schedule"
)

// paceGroup is the runner's group every request of a Sender passes
// first, under Config.Pace.
const paceGroup = "digest"

// channelGroup is the runner's group of the messages sent to a channel,
// under Config.Channel.
func channelGroup(id snowflake.ID) string { return "channel:" + id.String() }

// delivery is a digest under way: its messages, sent one after the other
// to the user's DM channel or, once that refused, to the fallback channel.
// One request of a delivery is under way at a time, so its messages
// arrive in order. Its fields are guarded by Sender.mu.
type delivery struct {
	u          *user
	msgs       []string
	next       int          // the message to send
	fallbackID snowflake.ID // the fallback channel when the digest was composed
	dm         snowflake.ID // the user's DM channel, once known
	fallback   bool         // sending to fallbackID
	tries      int          // failed tries of the current request
}

// dest returns the channel d's next message goes to.
func (d *delivery) dest() snowflake.ID {
	if d.fallback {
		return d.fallbackID
	}
	return d.dm
}

// op is a request of a delivery.
type op uint8

const (
	opOpenDM op = iota // POST /users/@me/channels
	opSend             // POST /channels/{id}/messages
)

// step is a request in the runner: first in paceGroup, then (a message)
// in its channel's group.
type step struct {
	d     *delivery
	op    op
	paced bool // past paceGroup
}

// startLocked composes the digest of u's gathered lines and starts
// sending it. The caller holds s.mu.
func (s *Sender) startLocked(u *user, now time.Time) {
	if len(u.lines) == 0 && u.more == 0 {
		s.forgetLocked(u)
		return
	}
	if u.more > 0 {
		s.log.Info().Str("user", u.id.String()).Int("lines", len(u.lines)).Int("dropped", u.more).
			Msg("digest over its line limit: the rest is counted, not listed")
	}
	d := &delivery{
		u:          u,
		msgs:       compose(s.cfg.Header, u.lines, u.more, maxContent-fallbackRoom),
		fallbackID: u.fallback,
	}
	u.lines, u.more, u.due, u.active = nil, 0, time.Time{}, d
	s.stats.Digests++
	s.advanceLocked(d, now)
}

// advanceLocked submits d's next request: opening the DM channel when it
// is not known, else the next message; or ends d when every message is
// done. The caller holds s.mu.
func (s *Sender) advanceLocked(d *delivery, now time.Time) {
	if d.next == len(d.msgs) {
		s.finishLocked(d, now)
		return
	}
	if !d.fallback {
		if until, ok := s.closedDMs.get(d.u.id); ok && now.Before(until) {
			d.fallback = true
		} else if d.dm == 0 {
			if id, ok := s.dmChans.get(d.u.id); ok {
				d.dm = id
			} else {
				s.submitLocked(step{d: d, op: opOpenDM})
				return
			}
		}
	}
	if d.fallback && d.fallbackID == 0 {
		s.dropRestLocked(d, now, "the user's DMs are closed and there is no fallback channel", nil)
		return
	}
	s.submitLocked(step{d: d, op: opSend})
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
		s.dropRestLocked(st.d, s.clock.Now(), "the scheduler refused the message", err)
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

// requestLocked sends st's request on a goroutine of its own, bounded by
// Config.SendTimeout, and hands its outcome to resultLocked. The caller
// holds s.mu.
func (s *Sender) requestLocked(st step) {
	d := st.d
	userID, dest := d.u.id, d.dest()
	var content string
	if st.op == opSend {
		content = d.msgs[d.next]
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
			dm  snowflake.ID
			err error
		)
		switch st.op {
		case opOpenDM:
			var ch *discord.DMChannel
			if ch, err = s.api.CreateDMChannel(userID, rest.WithCtx(ctx)); err == nil {
				if ch == nil || ch.ID() == 0 {
					err = errors.New("digest: Discord answered no DM channel")
				} else {
					dm = ch.ID()
				}
			}
		case opSend:
			_, err = s.api.CreateMessage(dest, discord.MessageCreate{Content: content, AllowedMentions: &noMentions}, rest.WithCtx(ctx))
		}
		cancel()

		s.mu.Lock()
		defer s.mu.Unlock()
		s.inflight--
		defer s.notifyLocked()
		if s.stopped {
			return
		}
		s.resultLocked(st, dm, err)
	}()
}

// resultLocked moves d on after a request's outcome. The caller holds
// s.mu.
func (s *Sender) resultLocked(st step, dm snowflake.ID, err error) {
	d := st.d
	now := s.clock.Now()
	o, wait := classify(err)
	if o == rateLimited {
		s.stats.RateLimited++
	}
	if o == rateLimited || o == failed {
		s.retryLocked(st, o, wait, err, now)
		return
	}
	if st.op == opOpenDM {
		if o != done {
			// Discord will not open a DM channel with the user.
			s.dmsClosedLocked(d, now, err)
			return
		}
		s.dmChans.put(d.u.id, dm)
		d.dm, d.tries = dm, 0
		s.advanceLocked(d, now)
		return
	}
	switch {
	case o == done:
		s.stats.Messages++
		if d.fallback {
			s.stats.Fallbacks++
		}
		d.next++
		d.tries = 0
		s.advanceLocked(d, now)
	case !d.fallback && o == dmsClosed:
		s.dmsClosedLocked(d, now, err)
	case !d.fallback && o == refused:
		// The DM channel is gone or unusable: open it again next time.
		s.dmChans.remove(d.u.id)
		s.log.Info().Str("user", d.u.id.String()).Str("error", err.Error()).Msg("DM channel refused a digest; using the fallback channel")
		d.fallback, d.tries = true, 0
		s.advanceLocked(d, now)
	case o == invalid:
		s.stats.DroppedMessages++
		s.log.Error().Str("user", d.u.id.String()).Str("channel", d.dest().String()).Str("error", err.Error()).
			Msg("Discord refused a digest message; it is dropped")
		d.next++
		d.tries = 0
		s.advanceLocked(d, now)
	default: // refused by the fallback channel
		s.dropRestLocked(d, now, "the fallback channel refused it", err)
	}
}

// dmsClosedLocked remembers for Config.DMsClosedFor that the user of d
// accepts no DM, and sends the rest of d to the fallback channel. The
// caller holds s.mu.
func (s *Sender) dmsClosedLocked(d *delivery, now time.Time, err error) {
	s.closedDMs.put(d.u.id, now.Add(s.cfg.DMsClosedFor))
	s.log.Info().Str("user", d.u.id.String()).Str("error", err.Error()).Msg("user's DMs are closed; digests go to the fallback channel")
	d.fallback, d.tries = true, 0
	s.advanceLocked(d, now)
}

// retryLocked tries st again after wait (a 429's retry_after) or after
// the backoff of its tries so far, or gives d up after Config.Attempts
// tries. The caller holds s.mu.
func (s *Sender) retryLocked(st step, o outcome, wait time.Duration, err error, now time.Time) {
	d := st.d
	d.tries++
	if d.tries >= s.cfg.Attempts {
		s.dropRestLocked(d, now, "every try failed", err)
		return
	}
	if o != rateLimited {
		wait = s.backoff(d.tries)
	}
	s.stats.Retries++
	s.log.Debug().Str("user", d.u.id.String()).Stringer("outcome", o).Dur("wait", wait).Str("error", err.Error()).
		Msg("digest request to be tried again")
	s.pushWakeupLocked(wakeup{at: now.Add(wait), d: d, op: st.op})
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

// dropRestLocked gives up the messages of d not sent yet, and ends d. The
// caller holds s.mu.
func (s *Sender) dropRestLocked(d *delivery, now time.Time, why string, err error) {
	n := len(d.msgs) - d.next
	s.stats.DroppedMessages += int64(n)
	ev := s.log.Warn().Str("user", d.u.id.String()).Int("messages", n).Str("reason", why)
	if d.fallback {
		ev = ev.Str("fallback_channel", d.fallbackID.String())
	}
	if err != nil {
		ev = ev.Str("error", err.Error())
	}
	ev.Msg("digest dropped; its results remain in /queue")
	d.next = len(d.msgs)
	s.finishLocked(d, now)
}

// finishLocked ends d: the user's next digest starts if it is due (or
// Close was called), and a user with nothing left is forgotten. The
// caller holds s.mu.
func (s *Sender) finishLocked(d *delivery, now time.Time) {
	u := d.u
	u.active = nil
	if len(u.lines) == 0 && u.more == 0 {
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
