package bot

import (
	"context"
	"sync"
	"time"

	"github.com/disgoorg/snowflake/v2"
)

// guildCache keeps, per server, a value read from the store (its pin
// emoji, its auto-pin rules) for the gateway's reading goroutine, which
// must not wait for the store. An event (E) of a server whose value was
// read less than guildCacheFor ago is judged by it at once; the first
// event of a server, and the first after that time, start one read on a
// goroutine of its own, and it and those that come meanwhile are held,
// in order, until the read ends and judges them (see judgeGuild). A read
// that fails leaves the value read before (or the one the read returned
// with its error, when none was) judging for guildRetryAfter. put records
// a value the bot itself just stored.
//
// Its zero value is ready; it is safe for simultaneous use.
type guildCache[V, E any] struct {
	mu      sync.Mutex
	entries map[snowflake.ID]*guildCacheEntry[V, E]
}

// guildCacheEntry is what is known of one server.
type guildCacheEntry[V, E any] struct {
	val   V
	known bool      // val was read (or put) at least once
	until time.Time // when val stops judging the server's events
	// reading is set while a read runs; waiting are the events it holds,
	// in order.
	reading bool
	waiting []E
	// gen counts the puts, so that a read begun before one does not undo
	// it.
	gen uint64
}

// cacheLookup is what lookup did with an event.
type cacheLookup int

const (
	cacheHit  cacheLookup = iota // the value is fresh: judge the event by it
	cacheHeld                    // a read runs: the event waits for it
	cacheRead                    // the event waits for a read the caller must start
	cacheFull                    // too many events wait for the read: dropped
)

// lookup returns the server's value when it is fresh at now; otherwise it
// holds ev for a read: one running, or one the caller must start
// (cacheRead, with the generation to hand to done).
func (c *guildCache[V, E]) lookup(guild snowflake.ID, ev E, now time.Time) (V, cacheLookup, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[guild]
	if e != nil && e.known && !e.reading && now.Before(e.until) {
		return e.val, cacheHit, 0
	}
	var zero V
	if e != nil && e.reading {
		if len(e.waiting) >= maxGuildWaiting {
			return zero, cacheFull, 0
		}
		e.waiting = append(e.waiting, ev)
		return zero, cacheHeld, 0
	}
	if e == nil {
		c.makeRoomLocked(now)
		e = &guildCacheEntry[V, E]{}
		c.entries[guild] = e
	}
	e.reading, e.waiting = true, []E{ev}
	return zero, cacheRead, e.gen
}

// abandon ends a read lookup asked for that will not run, and returns
// the events it held.
func (c *guildCache[V, E]) abandon(guild snowflake.ID) []E {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[guild]
	if e == nil {
		return nil
	}
	waiting := e.waiting
	e.reading, e.waiting = false, nil
	return waiting
}

// judger judges an event by its server's value.
type judger[V, E any] interface{ judge(V, E) }

// done records what the read of generation gen found (v, or err), then
// hands every event it held to j, in order, under the cache's lock, so
// that an event that comes meanwhile is judged after them.
func (c *guildCache[V, E]) done(guild snowflake.ID, gen uint64, v V, err error, now time.Time, j judger[V, E]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[guild]
	if e == nil {
		// Not expected: an entry being read is never forgotten.
		c.makeRoomLocked(now)
		e = &guildCacheEntry[V, E]{gen: gen}
		c.entries[guild] = e
	}
	switch {
	case e.gen != gen:
		// A put during the read: it holds.
	case err == nil:
		e.val, e.known, e.until = v, true, now.Add(guildCacheFor)
	default:
		if !e.known {
			e.val, e.known = v, true
		}
		e.until = now.Add(guildRetryAfter)
	}
	waiting := e.waiting
	e.reading, e.waiting = false, nil
	for _, ev := range waiting {
		j.judge(e.val, ev)
	}
}

// put records the value of guild that the bot just stored.
func (c *guildCache[V, E]) put(guild snowflake.ID, v V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[guild]
	if e == nil {
		c.makeRoomLocked(now)
		e = &guildCacheEntry[V, E]{}
		c.entries[guild] = e
	}
	e.val, e.known, e.until = v, true, now.Add(guildCacheFor)
	e.gen++
}

// value returns the value last read or put for guild, fresh or not.
func (c *guildCache[V, E]) value(guild snowflake.ID) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[guild]; e != nil && e.known {
		return e.val, true
	}
	var zero V
	return zero, false
}

// makeRoomLocked makes room for one more entry: when maxGuildEntries are
// remembered, it forgets those out of date, then, if that is not enough,
// others not being read. c.mu is held.
func (c *guildCache[V, E]) makeRoomLocked(now time.Time) {
	if c.entries == nil {
		c.entries = make(map[snowflake.ID]*guildCacheEntry[V, E])
	}
	if len(c.entries) < maxGuildEntries {
		return
	}
	for id, e := range c.entries {
		if !e.reading && !now.Before(e.until) {
			delete(c.entries, id)
		}
	}
	for id, e := range c.entries {
		if len(c.entries) < maxGuildEntries {
			return
		}
		if !e.reading {
			delete(c.entries, id)
		}
	}
}

// guildEvents is how judgeGuild treats the events of one kind. Its
// implementations are a struct of one pointer, which an interface holds
// without allocating: the gateway's events pay no allocation for it.
type guildEvents[V, E any] interface {
	// what names the value in the logs: "settings", "auto-pin rules".
	what() string
	// read reads a server's value; on an error, the value it returns
	// judges the server's events if none was read before.
	read(ctx context.Context, guild snowflake.ID) (V, error)
	// judge is handed each event with the value that judges it.
	judge(V, E)
	// refuse is handed an event that is not judged: busy (too many
	// held), or the bot is closing.
	refuse(ev E, busy bool)
}

// judgeGuild judges ev, an event of guild, by c's value of the server:
// at once when it is fresh, otherwise once a read ends, started here on a
// goroutine of its own if none runs. It never waits for the store.
func judgeGuild[V, E any](b *Bot, c *guildCache[V, E], guild snowflake.ID, ev E, k guildEvents[V, E]) {
	now := b.cfg.Now()
	v, st, gen := c.lookup(guild, ev, now)
	switch st {
	case cacheHit:
		k.judge(v, ev)
		return
	case cacheHeld:
		return
	case cacheFull:
		b.log.Warn().Str("guild_id", guild.String()).Msgf("event dropped: too many held while the server's %s are read", k.what())
		k.refuse(ev, true)
		return
	}
	if !b.enter() {
		for _, ev := range c.abandon(guild) {
			k.refuse(ev, false)
		}
		return
	}
	go func() {
		defer b.leave()
		ctx, cancel := context.WithTimeout(b.workCtx, guildReadTimeout)
		v, err := k.read(ctx, guild)
		cancel()
		if err != nil {
			b.log.Warn().Err(err).Str("guild_id", guild.String()).Msgf("reading the server's %s failed; its events are judged by what was read before", k.what())
		}
		c.done(guild, gen, v, err, b.cfg.Now(), k)
	}()
}
