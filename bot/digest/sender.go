package digest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/limit/schedule"
)

// API is the part of the bot's Discord API a Sender calls (see
// discordio.API): opening a user's DM channel and sending a message.
type API interface {
	OpenDM(ctx context.Context, userID snowflake.ID) (snowflake.ID, error)
	Send(ctx context.Context, channelID snowflake.ID, m discord.MessageCreate) error
}

var _ API = discordio.API(nil)

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
	// more"; over MaxUsers; after Close), of lines still gathered when
	// Close gave up, and of lines whose channel could not be checked.
	DroppedLines int64
	// Withheld is the number of lines not posted in the channel where
	// their user ran the command, their DMs closed: the user may not
	// read it, or there is none.
	Withheld int64
	// Resumed is the number of lines Resume took from the Outbox,
	// Adopted the number a SharedOutbox's later claims took from
	// processes that stopped, and OutboxErrors the number of the
	// Outbox's calls that failed.
	Resumed, Adopted, OutboxErrors int64
	// Digests is the number of digests composed.
	Digests int64
	// Messages is the number of messages Discord accepted, Fallbacks
	// those of them sent to a fallback channel.
	Messages, Fallbacks int64
	// DroppedMessages is the number of composed messages given up on:
	// the fallback channel refused, every try failed, Discord refused
	// the message itself, or Close gave up.
	DroppedMessages int64
	// Retries is the number of requests tried again after a 5xx, a
	// timeout, a broken connection or a 429; RateLimited counts the 429s.
	Retries, RateLimited int64
	// Users is the number of users with lines gathered or a digest under
	// way; Queued the number of requests waiting for their turn.
	Users, Queued int
}

// Sender gathers result lines per user and sends them as digests: by
// direct message, or, when the user's DMs are closed, each line in the
// channel where its command ran, if the user may still read it; every
// message at an instant the destination channel's limit allows (one
// schedule.Runner for all of them). See the package documentation.
//
// A Sender is safe for simultaneous use.
type Sender struct {
	api    API
	outbox Outbox       // nil: lines live in memory only
	shared SharedOutbox // outbox, when shared with other processes
	access Access       // nil: no digest goes to a channel
	clock  schedule.Clock
	log    zerolog.Logger
	cfg    Config
	runner *schedule.Runner[step] // also the timer of gathering delays and retries
	ctx    context.Context        // ends when the Sender stops: ends requests in flight
	cancel context.CancelFunc
	wg     sync.WaitGroup // the runner and requests in flight

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	closing   bool          // Close was called: Add keeps nothing
	stopped   bool          // Close is done waiting: nothing more is sent
	reported  bool
	users     map[snowflake.ID]*user
	alarms    map[uint64]*schedule.Alarm // gathering delays and retries in the runner
	nextAlarm uint64
	dmChans   *lru[snowflake.ID, snowflake.ID] // user → DM channel
	closedDMs *lru[snowflake.ID, time.Time]    // user → until when DMs count as closed
	queued    map[schedule.JobID]time.Time     // requests in the runner → when due
	keys      map[Key]struct{}                 // keys of the lines gathered or under way
	delivered *lru[Key, struct{}]              // keys of lines sent lately
	nextJob   schedule.JobID
	inflight  int
	deleting  int                 // Outbox deletions under way
	claiming  bool                // an adoption's claim is under way
	elsewhere *lru[Key, struct{}] // keys of lines another process sends
	overflow  int64               // lines dropped over MaxUsers, not logged yet
	stats     Stats
}

// user is a user with lines gathered or a digest under way.
type user struct {
	id     snowflake.ID
	lines  []item    // listed in the next digest
	more   []item    // over MaxLines: counted in the next digest, not listed
	due    time.Time // when the gathered lines go out; zero when none
	active *delivery // the digest under way, if any
}

// item is a line gathered for a user.
type item struct {
	key            Key
	guild, channel snowflake.ID // where the command ran
	text           string       // "" for a line over MaxLines, counted only
}

// New returns a Sender that sends with api, reads time from clock and
// logs to log (tagged component=digest); opts give it an Outbox and an
// Access. It starts one goroutine, the runner of the sends, gathering
// delays and retries, which Close stops.
func New(api API, clock schedule.Clock, log zerolog.Logger, cfg Config, opts ...Option) (*Sender, error) {
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
		changed:   make(chan struct{}),
		users:     make(map[snowflake.ID]*user),
		alarms:    make(map[uint64]*schedule.Alarm),
		dmChans:   newLRU[snowflake.ID, snowflake.ID](cfg.DMCache),
		closedDMs: newLRU[snowflake.ID, time.Time](cfg.DMCache),
		queued:    make(map[schedule.JobID]time.Time),
		keys:      make(map[Key]struct{}),
		delivered: newLRU[Key, struct{}](cfg.DMCache),
		elsewhere: newLRU[Key, struct{}](cfg.DMCache),
	}
	for _, o := range opts {
		o(s)
	}
	s.runner = schedule.NewRunner(clock, s.handle)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.runner.Run(ctx)
	}()
	if s.shared != nil {
		s.mu.Lock()
		s.adoptLaterLocked(clock.Now())
		s.mu.Unlock()
	}
	return s, nil
}

// Add queues a result line for its user, to go out in their next
// digest, and reports whether it was kept to be listed. The line's
// channel is where it goes when the user's DMs are closed, if they may
// still read it. The text is made one line of at most
// Config.MaxLineRunes characters; a blank one is ignored, and so is a
// line whose key is gathered already or was sent lately (a job's result
// reported twice). Lines over Config.MaxLines for the user are counted
// in the digest; lines for users beyond Config.MaxUsers and lines added
// after Close are dropped and counted (with an Outbox, they stay in it
// for the next Resume). Add never waits for Discord or the Outbox.
func (s *Sender) Add(l Line) bool {
	l.Text = cleanLine(l.Text, s.cfg.MaxLineRunes)
	if l.Text == "" || l.User == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	return s.addLocked(l, s.clock.Now()) == listed
}

// How addLocked took a line.
type added uint8

const (
	notAdded added = iota // not kept
	listed                // to be listed in the digest
	counted               // over MaxLines: to be counted in the digest
)

// addLocked gathers l, whose text is clean. The caller holds s.mu.
func (s *Sender) addLocked(l Line, now time.Time) added {
	if s.closing {
		s.stats.DroppedLines++
		return notAdded
	}
	if !l.Key.IsZero() {
		if _, ok := s.keys[l.Key]; ok {
			return notAdded
		}
		if _, ok := s.elsewhere.get(l.Key); ok {
			return notAdded // another process sends it
		}
		if _, ok := s.delivered.get(l.Key); ok {
			// Sent already: a copy stored again since goes too.
			s.deleteLocked([]Key{l.Key})
			return notAdded
		}
	}
	u := s.users[l.User]
	if u == nil {
		if len(s.users) >= s.cfg.MaxUsers {
			if s.overflow == 0 {
				s.log.Warn().Int("max_users", s.cfg.MaxUsers).
					Msg("too many users waiting for a digest; result lines for others are dropped (they remain in /queue, and those kept in the outbox are sent after a restart)")
			}
			s.overflow++
			s.stats.DroppedLines++
			return notAdded
		}
		u = &user{id: l.User}
		s.users[l.User] = u
	}
	it := item{key: l.Key, guild: l.Guild, channel: l.Channel, text: l.Text}
	if !l.Key.IsZero() {
		s.keys[l.Key] = struct{}{}
	}
	if u.due.IsZero() {
		u.due = now.Add(s.cfg.Gather)
		s.alarmLocked(u.due, func(now time.Time) { s.dueLocked(u, now) })
	}
	if len(u.lines) >= s.cfg.MaxLines {
		it.text = ""
		u.more = append(u.more, it)
		s.stats.DroppedLines++
		return counted
	}
	u.lines = append(u.lines, it)
	s.stats.Lines++
	return listed
}

// Keep stores l in the Outbox, durably, before the result it tells is
// recorded anywhere else, and returns the line to Add: l, or the line
// stored first under its key, which Keep keeps (a job's result reported
// again after a crash is less precise than the first). l needs a key, a
// user and a text; the text is cleaned as Add does. Without an Outbox,
// Keep returns l. On error l is not kept, and the caller may still Add
// it.
func (s *Sender) Keep(ctx context.Context, l Line) (Line, error) {
	l.Text = cleanLine(l.Text, s.cfg.MaxLineRunes)
	if err := checkLine(l); err != nil {
		return l, fmt.Errorf("digest: Keep: line %v for user %d: %w", l.Key, l.User, err)
	}
	if s.outbox == nil {
		return l, nil
	}
	stored, err := s.outbox.Put(ctx, l)
	if s.shared != nil && errors.Is(err, ErrElsewhere) {
		// Another process sends it: Add ignores it.
		s.mu.Lock()
		s.elsewhere.put(stored.Key, struct{}{})
		s.mu.Unlock()
		return stored, nil
	}
	if err != nil {
		s.mu.Lock()
		s.stats.OutboxErrors++
		s.mu.Unlock()
		return l, fmt.Errorf("digest: Keep: line %v: %w", l.Key, err)
	}
	return stored, nil
}

// Resume gathers the lines the Outbox holds, results a previous run kept
// and did not send, as Add does (each goes out a gathering delay from
// now), and returns how many it took. With a SharedOutbox, it takes only
// the lines it claims: those kept under this process's id and those of
// processes that no longer run. Call it once, before the work whose
// results Keep stores resumes. Lines the Outbox could not read are
// reported in the error; the others are taken all the same.
func (s *Sender) Resume(ctx context.Context) (int, error) {
	if s.outbox == nil {
		return 0, nil
	}
	var lines []Line
	collect := func(l Line) error {
		lines = append(lines, l)
		return nil
	}
	var err error
	if s.shared != nil {
		err = s.shared.Claim(ctx, true, collect)
	} else {
		err = s.outbox.Lines(ctx, collect)
	}
	n := s.gather(lines, err, &s.stats.Resumed)
	if err != nil {
		return n, fmt.Errorf("digest: Resume: %w", err)
	}
	return n, nil
}

// gather adds lines, taken from the Outbox, as Add does, counts those
// taken in *count and a failed read (err) in Stats.OutboxErrors, and
// returns how many it took.
func (s *Sender) gather(lines []Line, err error, count *int64) int {
	// In the order their jobs were queued, as far as their IDs tell.
	slices.SortStableFunc(lines, func(a, b Line) int { return cmp.Compare(a.Key.Job, b.Key.Job) })
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	n := 0
	for _, l := range lines {
		// Claimed: this process's to send from now on.
		s.elsewhere.remove(l.Key)
		l.Text = cleanLine(l.Text, s.cfg.MaxLineRunes)
		if l.Text == "" || l.User == 0 {
			continue
		}
		if s.addLocked(l, now) != notAdded {
			n++
		}
	}
	*count += int64(n)
	if err != nil {
		s.stats.OutboxErrors++
	}
	s.notifyLocked()
	return n
}

// adoptLaterLocked files the next adoption, Config.Adopt after now: a
// claim of the lines of processes that stopped running, on a goroutine
// of its own, whose lines are gathered as Resume's are. The caller holds
// s.mu.
func (s *Sender) adoptLaterLocked(now time.Time) {
	s.alarmLocked(now.Add(s.cfg.Adopt), func(time.Time) {
		if s.closing || s.claiming {
			return
		}
		s.claiming = true
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.adopt()
		}()
	})
}

// adopt claims the lines of processes that stopped running and gathers
// them, then files the next adoption. A failure is logged; the next
// adoption tries again.
func (s *Sender) adopt() {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.SendTimeout)
	var lines []Line
	err := s.shared.Claim(ctx, false, func(l Line) error {
		lines = append(lines, l)
		return nil
	})
	cancel()
	n := s.gather(lines, err, &s.stats.Adopted)
	if err != nil && s.ctx.Err() == nil {
		s.log.Error().Err(err).Int("lines", n).
			Msg("claiming the digest lines of stopped processes failed; trying again later")
	} else if n > 0 {
		s.log.Info().Int("lines", n).Msg("sending the digest lines of a stopped process")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	s.claiming = false
	if !s.closing {
		s.adoptLaterLocked(s.clock.Now())
	}
}

// deleteLocked deletes keys from the Outbox, on a goroutine of its own:
// a failure is logged, and the lines may be sent again after a restart.
// The caller holds s.mu.
func (s *Sender) deleteLocked(keys []Key) {
	if s.outbox == nil || len(keys) == 0 {
		return
	}
	s.deleting++
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// Not s.ctx: a deletion outlives Close's end of requests.
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.SendTimeout)
		err := s.outbox.Delete(ctx, keys)
		cancel()
		s.mu.Lock()
		defer s.mu.Unlock()
		defer s.notifyLocked()
		s.deleting--
		if err != nil {
			s.stats.OutboxErrors++
			s.log.Error().Err(err).Int("lines", len(keys)).
				Msg("removing digest lines from the outbox failed; they may be sent again after a restart")
		}
	}()
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
// remain visible in /queue, and the lines kept in the Outbox are sent
// after the next Resume. Close waits for the Outbox's deletions under
// way; call it before closing the Outbox. It is safe to call more than
// once.
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
	for id, a := range s.alarms {
		a.Stop()
		delete(s.alarms, id)
	}
	var lines, msgs int64
	for id, u := range s.users {
		lines += int64(len(u.lines) + len(u.more))
		if d := u.active; d != nil {
			msgs += int64(len(d.msgs) - d.next)
			for _, g := range d.groups {
				lines += int64(len(g.items))
			}
			if d.fallback && d.msgs == nil {
				lines += int64(len(d.cur.items))
			}
		}
		delete(s.users, id)
	}
	clear(s.keys)
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

// alarmLocked has the runner call act, with s.mu held, once the clock
// reads at, unless the Sender has stopped by then. The caller holds s.mu.
func (s *Sender) alarmLocked(at time.Time, act func(now time.Time)) {
	s.nextAlarm++
	id := s.nextAlarm
	// The runner calls the function on its goroutine, which waits for
	// s.mu: the alarm is in s.alarms by then.
	s.alarms[id] = s.runner.At(at, func(now time.Time) {
		s.mu.Lock()
		defer s.mu.Unlock()
		defer s.notifyLocked()
		delete(s.alarms, id)
		if !s.stopped {
			act(now)
		}
	})
}

// dueLocked starts u's digest once its gathering delay is over, unless
// it was sent already or waits for the digest under way. The caller
// holds s.mu.
func (s *Sender) dueLocked(u *user, now time.Time) {
	if s.users[u.id] != u || u.active != nil || u.due.IsZero() || u.due.After(now) {
		return
	}
	s.startLocked(u, now)
}
