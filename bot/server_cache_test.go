package bot

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/links"
)

// TestGuildCache steps one server's entry through its life: the first
// event asks for a read, the next are held, the read judges them in
// order; the value judges at once until guildCacheFor, then a read is
// asked again; a failed read keeps the value for guildRetryAfter; a put
// during a read wins over it; too many held events are refused.
func TestGuildCache(t *testing.T) {
	var c guildCache[string, int]
	const g = snowflake.ID(7)
	var judged []string
	judge := judgeFunc[string, int](func(v string, ev int) { judged = append(judged, v+":"+string(rune('0'+ev))) })
	run := func(step int, at time.Time, ev int, want cacheLookup, wantV string) uint64 {
		t.Helper()
		v, st, gen := c.lookup(g, ev, at)
		if st != want || v != wantV {
			t.Fatalf("step %d: lookup(%d) = %q, %v; want %q, %v", step, ev, v, st, wantV, want)
		}
		return gen
	}
	gen := run(0, t0, 1, cacheRead, "")
	run(1, t0, 2, cacheHeld, "")
	run(2, t0, 3, cacheHeld, "")
	if _, ok := c.value(g); ok {
		t.Fatal("a value before any read")
	}
	c.done(g, gen, "a", nil, t0, judge)
	if want := []string{"a:1", "a:2", "a:3"}; !slices.Equal(judged, want) {
		t.Fatalf("judged %v, want %v", judged, want)
	}
	run(3, t0.Add(guildCacheFor-time.Nanosecond), 4, cacheHit, "a")

	// Out of date: read again; the read fails and the old value judges
	// for guildRetryAfter.
	judged = nil
	gen = run(4, t0.Add(guildCacheFor), 5, cacheRead, "")
	c.done(g, gen, "ignored", errors.New("store down"), t0.Add(guildCacheFor), judge)
	if want := []string{"a:5"}; !slices.Equal(judged, want) {
		t.Fatalf("after a failed read: judged %v, want %v", judged, want)
	}
	run(5, t0.Add(guildCacheFor+guildRetryAfter-time.Nanosecond), 6, cacheHit, "a")

	// A put during a read wins over what the read found.
	judged = nil
	at := t0.Add(guildCacheFor + guildRetryAfter)
	gen = run(6, at, 7, cacheRead, "")
	c.put(g, "put", at)
	c.done(g, gen, "stale", nil, at, judge)
	if want := []string{"put:7"}; !slices.Equal(judged, want) {
		t.Fatalf("put during a read: judged %v, want %v", judged, want)
	}
	if v, ok := c.value(g); !ok || v != "put" {
		t.Fatalf("value %q, %v; want put", v, ok)
	}

	// Held events are bounded; an abandoned read hands back what it held.
	at = at.Add(guildCacheFor)
	run(7, at, 1, cacheRead, "")
	for i := 1; i < maxGuildWaiting; i++ {
		run(8, at, 2, cacheHeld, "")
	}
	run(9, at, 3, cacheFull, "")
	if n := len(c.abandon(g)); n != maxGuildWaiting {
		t.Fatalf("abandon returned %d events, want %d", n, maxGuildWaiting)
	}
	run(10, at, 4, cacheRead, "")

	// A failed first read judges by the value it returned.
	var d guildCache[string, int]
	judged = nil
	_, _, gen = d.lookup(g, 1, t0)
	d.done(g, gen, "default", errors.New("store down"), t0, judge)
	if want := []string{"default:1"}; !slices.Equal(judged, want) {
		t.Fatalf("failed first read: judged %v, want %v", judged, want)
	}
}

// TestGuildCacheBounds: at maxGuildEntries, the entries out of date are
// forgotten first, then others, never one being read.
func TestGuildCacheBounds(t *testing.T) {
	var c guildCache[int, int]
	for i := range maxGuildEntries {
		c.put(snowflake.ID(i+1), i, t0)
	}
	reading := snowflake.ID(1)
	c.entries[reading].reading = true
	c.put(snowflake.ID(maxGuildEntries+1), 0, t0.Add(time.Second))
	if n := len(c.entries); n > maxGuildEntries {
		t.Fatalf("%d entries, want at most %d", n, maxGuildEntries)
	}
	if c.entries[reading] == nil {
		t.Fatal("an entry being read was forgotten")
	}
}

// judgeFunc is a func as a judger.
type judgeFunc[V, E any] func(V, E)

func (f judgeFunc[V, E]) judge(v V, ev E) { f(v, ev) }

// TestGuildEventsDropWithoutAllocating: a message, an edit, a delete and a
// reaction that concern nothing, of a server whose rules and emoji are in
// memory, are dropped without allocating.
func TestGuildEventsDropWithoutAllocating(t *testing.T) {
	w := newWorld(t, worldOptions{quiet: true})
	const guild = snowflake.ID(1300000000000000002)
	now := w.bot.cfg.Now()
	w.bot.autopin.putRules(guild, []links.AutopinRule{{Channel: "1300000000000000001", Owner: "1", Account: "a1", Board: "b1"}}, now)
	w.bot.reactions.guilds.put(guild, w.bot.pinEmoji(), now)
	ignored := 0
	w.bot.autopin.onDone = func(_ discordio.Message, result string) {
		if result == autopinIgnored {
			ignored++
		}
	}
	w.bot.reactions.onDone = func(_ discordio.Reaction, result string) {
		if result == reactionIgnored {
			ignored++
		}
	}
	m := discordio.Message{GuildID: guild, ChannelID: 1300000000000000010, MessageID: 1500000000000000000, AuthorID: 1400000000000000000}
	r := discordio.Reaction{Added: true, GuildID: guild, ChannelID: m.ChannelID, MessageID: m.MessageID, UserID: m.AuthorID, Emoji: "👍"}
	allocs := testing.AllocsPerRun(100, func() {
		for _, k := range []discordio.MessageKind{discordio.MessageCreated, discordio.MessageUpdated, discordio.MessageDeleted} {
			m.Kind = k
			w.bot.HandleMessage(m)
		}
		w.bot.HandleReaction(r)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per 4 events dropped, want none", allocs)
	}
	if ignored != 4*101 {
		t.Errorf("%d events ignored, want %d", ignored, 4*101)
	}
}
