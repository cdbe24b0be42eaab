package digest

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/rest"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors/schedule"
)

// API is the part of disgo's REST client a Sender calls; rest.Rest, the
// bot's client.Rest, has it.
type API interface {
	CreateDMChannel(userID snowflake.ID, opts ...rest.RequestOpt) (*discord.DMChannel, error)
	CreateMessage(channelID snowflake.ID, messageCreate discord.MessageCreate, opts ...rest.RequestOpt) (*discord.Message, error)
}

var _ API = rest.Rest(nil)

// noMentions is the allowed_mentions of every digest: lines may hold
// user text, and a digest in a fallback channel names its user; nobody is
// pinged.
var noMentions = discord.AllowedMentions{
	Parse: []discord.AllowedMentionType{},
	Roles: []snowflake.ID{},
	Users: []snowflake.ID{},
}

// Stats counts what a Sender did since New.
type Stats struct {
	// Lines is the number of lines Add kept.
	Lines int64
	// DroppedLines is the number of lines Add did not keep (over
	// MaxLines for their user, which the digest counts in its "… and K
	// more"; over MaxUsers; after Close) and of lines still gathered
	// when Close gave up.
	DroppedLines int64
	// Digests is the number of digests composed.
	Digests int64
	// Messages is the number of messages Discord accepted, Fallbacks
	// those of them sent to a fallback channel.
	Messages, Fallbacks int64
	// DroppedMessages is the number of composed messages given up on:
	// no fallback channel, the fallback channel refused, every try
	// failed, Discord refused the message itself, or Close gave up.
	DroppedMessages int64
	// Retries is the number of requests tried again after a 5xx, a
	// timeout, a broken connection or a 429; RateLimited counts the 429s.
	Retries, RateLimited int64
	// Users is the number of users with lines gathered or a digest under
	// way; Queued the number of requests waiting for their turn.
	Users, Queued int
}

// Sender gathers result lines per user and sends them as digests: by
// direct message, or in the user's fallback channel when their DMs are
// closed, every message at an instant the destination channel's limit
// allows (one schedule.Runner for all of them). See the package
// documentation.
//
// A Sender is safe for simultaneous use.
type Sender struct {
	api    API
	clock  schedule.Clock
	log    zerolog.Logger
	cfg    Config
	runner *schedule.Runner[step]
	ctx    context.Context // ends when the Sender stops: ends requests in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup // the runner, the loop and requests in flight
	wake   chan struct{}  // capacity 1: the loop looks again

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	closing   bool          // Close was called: Add keeps nothing
	stopped   bool          // Close is done waiting: nothing more is sent
	reported  bool
	users     map[snowflake.ID]*user
	wakeups   wakeups
	dmChans   *lru[snowflake.ID, snowflake.ID] // user → DM channel
	closedDMs *lru[snowflake.ID, time.Time]    // user → until when DMs count as closed
	queued    map[schedule.JobID]time.Time     // requests in the runner → when due
	nextJob   schedule.JobID
	inflight  int
	overflow  int64 // lines dropped over MaxUsers, not logged yet
	stats     Stats
}

// user is a user with lines gathered or a digest under way.
type user struct {
	id       snowflake.ID
	fallback snowflake.ID // the latest fallback channel Add named
	lines    []string
	more     int       // lines over MaxLines, dropped
	due      time.Time // when the gathered lines go out; zero when none
	active   *delivery // the digest under way, if any
}

// wakeup is an instant the loop acts at: a user's digest is due (d nil),
// or a failed request of d is tried again.
type wakeup struct {
	at time.Time
	u  *user
	d  *delivery
	op op
}

// wakeups is a min-heap of wakeup by instant.
type wakeups []wakeup

func (h wakeups) Len() int           { return len(h) }
func (h wakeups) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeups) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeups) Push(x any)        { *h = append(*h, x.(wakeup)) }
func (h *wakeups) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = wakeup{}
	*h = old[:len(old)-1]
	return w
}

// New returns a Sender that sends with api, reads time from clock and
// logs to log (tagged component=digest). It starts two goroutines, the
// runner of the sends and a loop for gathering delays and retries, which
// Close stops.
func New(api API, clock schedule.Clock, log zerolog.Logger, cfg Config) (*Sender, error) {
	if api == nil {
		return nil, errors.New("digest: New: nil API")
	}
	if clock == nil {
		return nil, errors.New("digest: New: nil Clock")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sender{
		api:       api,
		clock:     clock,
		log:       log.With().Str("component", "digest").Logger(),
		cfg:       cfg,
		ctx:       ctx,
		cancel:    cancel,
		wake:      make(chan struct{}, 1),
		changed:   make(chan struct{}),
		users:     make(map[snowflake.ID]*user),
		dmChans:   newLRU[snowflake.ID, snowflake.ID](cfg.DMCache),
		closedDMs: newLRU[snowflake.ID, time.Time](cfg.DMCache),
		queued:    make(map[schedule.JobID]time.Time),
	}
	s.runner = schedule.NewRunner(clock, s.handle)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		_ = s.runner.Run(ctx)
	}()
	go s.loop(ctx)
	return s, nil
}

// Add queues a result line for a user, to go out in their next digest,
// and reports whether it was kept. fallbackChannelID is where the digest
// goes when the user's DMs are closed (the channel where they ran the
// command; zero for none); the latest one given for a user is used. The
// line is made one line of at most Config.MaxLineRunes characters; a
// blank one is ignored. Lines over Config.MaxLines for the user are
// counted in the digest, lines for users beyond Config.MaxUsers and lines
// added after Close are dropped and counted. Add never waits for Discord.
func (s *Sender) Add(userID, fallbackChannelID snowflake.ID, line string) bool {
	line = cleanLine(line, s.cfg.MaxLineRunes)
	if line == "" || userID == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	if s.closing {
		s.stats.DroppedLines++
		return false
	}
	u := s.users[userID]
	if u == nil {
		if len(s.users) >= s.cfg.MaxUsers {
			if s.overflow == 0 {
				s.log.Warn().Int("max_users", s.cfg.MaxUsers).
					Msg("too many users waiting for a digest; result lines for others are dropped (they remain in /queue)")
			}
			s.overflow++
			s.stats.DroppedLines++
			return false
		}
		u = &user{id: userID}
		s.users[userID] = u
	}
	if fallbackChannelID != 0 {
		u.fallback = fallbackChannelID
	}
	if len(u.lines) >= s.cfg.MaxLines {
		u.more++
		s.stats.DroppedLines++
		return false
	}
	u.lines = append(u.lines, line)
	s.stats.Lines++
	if u.due.IsZero() {
		u.due = s.clock.Now().Add(s.cfg.Gather)
		s.pushWakeupLocked(wakeup{at: u.due, u: u})
	}
	return true
}

// Stats returns what the Sender did so far.
func (s *Sender) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Users, st.Queued = len(s.users), len(s.queued)
	return st
}

// Close stops accepting lines, sends every digest gathered at once,
// without waiting for its gathering delay, and waits until all are sent
// or given up on, or until ctx ends. It then stops the Sender: requests
// in flight are abandoned, and what was not sent is counted in Stats,
// logged, and reported in the error, which wraps ctx.Err(). The results
// remain visible in /queue. Close is safe to call more than once.
func (s *Sender) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing {
		s.closing = true
		now := s.clock.Now()
		for _, u := range s.users {
			if u.active == nil {
				s.startLocked(u, now)
			}
		}
		s.notifyLocked()
	}
	s.mu.Unlock()

	waitErr := s.waitFor(ctx, func() bool { return len(s.users) == 0 })

	s.mu.Lock()
	s.stopped = true
	var lines, msgs int64
	for id, u := range s.users {
		lines += int64(len(u.lines) + u.more)
		if d := u.active; d != nil {
			msgs += int64(len(d.msgs) - d.next)
		}
		delete(s.users, id)
	}
	s.stats.DroppedLines += lines
	s.stats.DroppedMessages += msgs
	first := !s.reported
	s.reported = true
	st := s.stats
	s.notifyLocked()
	s.mu.Unlock()

	s.cancel()
	s.wg.Wait()

	if first {
		ev := s.log.Info()
		if st.DroppedLines > 0 || st.DroppedMessages > 0 {
			ev = s.log.Warn()
		}
		ev.Int64("lines", st.Lines).Int64("digests", st.Digests).Int64("messages", st.Messages).
			Int64("fallbacks", st.Fallbacks).Int64("dropped_lines", st.DroppedLines).
			Int64("dropped_messages", st.DroppedMessages).Int64("unsent_lines_at_close", lines).
			Int64("unsent_messages_at_close", msgs).Msg("digests closed")
	}
	if lines > 0 || msgs > 0 {
		return fmt.Errorf("digest: closed with %d messages and %d lines unsent: %w", msgs, lines, waitErr)
	}
	return nil
}

// waitFor blocks until cond, evaluated with s.mu held, reports true, or
// ctx ends.
func (s *Sender) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// notifyLocked wakes waitFor. The caller holds s.mu.
func (s *Sender) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// pushWakeupLocked files w, and tells the loop when it is now the first.
// The caller holds s.mu.
func (s *Sender) pushWakeupLocked(w wakeup) {
	first := len(s.wakeups) == 0 || w.at.Before(s.wakeups[0].at)
	heap.Push(&s.wakeups, w)
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// loop acts at each wakeup's instant, on one timer of the clock, until
// ctx ends.
func (s *Sender) loop(ctx context.Context) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		now := s.clock.Now()
		for len(s.wakeups) > 0 && !s.wakeups[0].at.After(now) && !s.stopped {
			s.wakeLocked(heap.Pop(&s.wakeups).(wakeup), now)
		}
		next, armed := time.Time{}, len(s.wakeups) > 0
		if armed {
			next = s.wakeups[0].at
		}
		s.notifyLocked()
		s.mu.Unlock()

		var timer schedule.Timer
		var fired <-chan time.Time
		if armed {
			timer = s.clock.Timer(next)
			fired = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-s.wake:
		case <-fired:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// wakeLocked acts on a wakeup that came due. The caller holds s.mu.
func (s *Sender) wakeLocked(w wakeup, now time.Time) {
	if w.d != nil {
		s.submitLocked(step{d: w.d, op: w.op})
		return
	}
	u := w.u
	if s.users[u.id] != u || u.active != nil || u.due.IsZero() || u.due.After(now) {
		return // sent already, or waits for the digest under way
	}
	s.startLocked(u, now)
}
