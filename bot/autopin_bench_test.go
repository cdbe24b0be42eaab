package bot

import (
	"fmt"
	"testing"

	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/links"
)

// BenchmarkMessageEventsIgnored measures what a guild message of a
// channel with no auto-pin rule costs the gateway's reading goroutine: a
// MESSAGE_CREATE dispatch as Discord sends it without the message content
// intent, decoded as disgo decodes it, turned into a discordio.Message
// and dropped by Bot.HandleMessage. Its server has a rule in another
// channel, known from memory as after its first message. "decode" is the
// decoding alone, the floor. It reports events/s; run it with -cpu 1 for
// one core's.
func BenchmarkMessageEventsIgnored(b *testing.B) {
	w := newWorld(b, worldOptions{quiet: true})
	const guild = snowflake.ID(1300000000000000002)
	var raws [][]byte
	for i := range 64 {
		raws = append(raws, fmt.Appendf(nil, `{"op":0,"s":%d,"t":"MESSAGE_CREATE","d":{"id":"%d","type":0,"channel_id":"%d","guild_id":"%d","author":{"id":"%d","username":"u%d","discriminator":"0","global_name":null,"avatar":null},"member":{"roles":[],"joined_at":"2026-01-01T00:00:00.000000+00:00","deaf":false,"mute":false,"flags":0},"content":"","timestamp":"2026-01-01T00:00:00.000000+00:00","edited_timestamp":null,"tts":false,"mention_everyone":false,"mentions":[],"mention_roles":[],"attachments":[],"embeds":[],"components":[],"pinned":false,"flags":0,"nonce":"%d"}}`,
			i+1, 1500000000000000000+i, 1300000000000000010+i%8, guild, 1400000000000000000+i, i, i))
	}
	w.bot.autopin.putRules(guild, []links.AutopinRule{{Channel: "1300000000000000001", Owner: "1", Account: "a1", Board: "b1"}}, w.bot.cfg.Now())
	ignored := 0
	w.bot.autopin.onDone = func(_ discordio.Message, result string) {
		if result == autopinIgnored {
			ignored++
		}
	}
	benchEventsIgnored(b, raws, &ignored, func(ev gateway.EventData) bool {
		m, ok := discordio.MessageOf(ev)
		if ok {
			w.bot.HandleMessage(m)
		}
		return ok
	})
}
