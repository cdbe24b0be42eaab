package bot

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// BenchmarkReactionEventsIgnored measures what a reaction that concerns
// no pin costs the gateway's reading goroutine: a MESSAGE_REACTION_ADD
// dispatch as Discord sends it, decoded as disgo decodes it, turned into
// a discordio.Reaction and dropped by Bot.HandleReaction (another emoji,
// or a bot's 📌). "decode" is the decoding alone, the floor. It reports
// events/s; run it with -cpu 1 for one core's.
func BenchmarkReactionEventsIgnored(b *testing.B) {
	w := newWorld(b, worldOptions{quiet: true})
	var raws [][]byte
	for i := range 64 {
		emoji, bot := `{"id":null,"name":"👍"}`, false
		if i%8 == 0 {
			emoji, bot = `{"id":null,"name":"📌"}`, true
		}
		raws = append(raws, fmt.Appendf(nil, `{"op":0,"s":%d,"t":"MESSAGE_REACTION_ADD","d":{"user_id":"%d","channel_id":"1300000000000000001","message_id":"%d","guild_id":"1300000000000000002","member":{"user":{"id":"%d","username":"u%d","discriminator":"0","global_name":null,"avatar":null,"bot":%v},"roles":[],"joined_at":"2026-01-01T00:00:00.000000+00:00","deaf":false,"mute":false,"flags":0},"emoji":%s,"burst":false,"type":0,"message_author_id":"1300000000000000003"}}`,
			i+1, 1400000000000000000+i, 1500000000000000000+i, 1400000000000000000+i, i, bot, emoji))
	}
	decode := func(raw []byte) gateway.EventData {
		var m gateway.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			b.Fatal(err)
		}
		ev, ok := m.D.(gateway.EventData)
		if !ok {
			b.Fatalf("decoded %T", m.D)
		}
		return ev
	}
	// The server's pin emoji is known, as after its first reaction: the
	// events are judged at once.
	w.bot.reactions.guilds.put(snowflake.ID(1300000000000000002), w.bot.pinEmoji(), w.bot.cfg.Now())
	ignored := 0
	w.bot.reactions.onDone = func(_ discordio.Reaction, result string) {
		if result == reactionIgnored {
			ignored++
		}
	}
	run := func(b *testing.B, drop bool) {
		b.ReportAllocs()
		ignored = 0
		start := time.Now()
		for i := range b.N {
			ev := decode(raws[i%len(raws)])
			if !drop {
				continue
			}
			r, ok := discordio.ReactionOf(ev)
			if !ok {
				b.Fatalf("no reaction in %T", ev)
			}
			w.bot.HandleReaction(r)
		}
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		if drop && ignored != b.N {
			b.Fatalf("%d of %d events ignored", ignored, b.N)
		}
	}
	b.Run("decode", func(b *testing.B) { run(b, false) })
	b.Run("decode+drop", func(b *testing.B) { run(b, true) })
}
