package bot

import (
	"fmt"
	"testing"

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
	// The server's pin emoji is known, as after its first reaction: the
	// events are judged at once.
	w.bot.reactions.guilds.put(snowflake.ID(1300000000000000002), w.bot.pinEmoji(), w.bot.cfg.Now())
	ignored := 0
	w.bot.reactions.onDone = func(_ discordio.Reaction, result string) {
		if result == reactionIgnored {
			ignored++
		}
	}
	benchEventsIgnored(b, raws, &ignored, func(ev gateway.EventData) bool {
		r, ok := discordio.ReactionOf(ev)
		if ok {
			w.bot.HandleReaction(r)
		}
		return ok
	})
}
