package discordtest_test

import (
	"fmt"
	"net/http"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// A message the bot fetches is missing once, then found.
func ExampleServer_Inject() {
	s := discordtest.NewServer()
	defer s.Close()
	g, _ := s.AddGuild(discordtest.Guild{})
	ch, _ := s.AddChannel(discordtest.Channel{GuildID: g.ID})
	m, _ := s.AddMessage(discordtest.Message{
		ChannelID:   ch.ID,
		Attachments: []discordtest.Attachment{{Filename: "cat.png", ContentType: "image/png"}},
	})
	_ = s.Inject(discordtest.RouteGetMessage, 1, discordtest.Fault{Status: http.StatusNotFound, Code: 10008, Message: "Unknown Message"})

	for range 2 {
		rq, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/channels/%d/messages/%d", s.APIURL(), ch.ID, m.ID), nil)
		rq.Header.Set("Authorization", "Bot "+s.Token())
		rs, err := http.DefaultClient.Do(rq)
		if err != nil {
			fmt.Println(err)
			return
		}
		rs.Body.Close()
		fmt.Println(rs.StatusCode, rs.Header.Get("X-RateLimit-Remaining"))
	}
	// Output:
	// 404 49
	// 200 48
}
