package discordiotest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// TestClassifiersAgreeWithREST checks that each refusal of the Fake is,
// to discordio's classifiers, what discordio.REST makes of the same
// answer from Discord: the same status and code, NotFound, Forbidden,
// DMRefused and Refused alike.
func TestClassifiersAgreeWithREST(t *testing.T) {
	w := newWorld(t)
	f := w.f
	dm, err := f.OpenDM(bg, w.user)
	wantOK(t, "OpenDM", err)
	f.SetDMsClosed(w.user, true)
	hidden := f.AddChannel(w.guild)
	f.SetHidden(hidden, true)
	acked := f.SlashCommand(w.in(), "pin")
	wantOK(t, "Respond", f.Respond(bg, acked.ID(), acked.Token(), deferral))
	late := f.SlashCommand(w.in(), "pin")
	expired := f.SlashCommand(w.in(), "pin")
	f.Expire(expired.Token())
	f.Advance(time.Minute)
	msg := discord.MessageCreate{Content: "x"}

	cases := []struct {
		name string
		code int
		fake func() error
		rest func(discordio.API) error
	}{
		{"unknown message", 10008, func() error { _, err := f.Message(bg, w.channel, 1); return err },
			func(a discordio.API) error { _, err := a.Message(bg, w.channel, 1); return err }},
		{"unknown channel", 10003, func() error { _, err := f.Channel(bg, 1); return err },
			func(a discordio.API) error { _, err := a.Channel(bg, 1); return err }},
		{"missing access", 50001, func() error { _, err := f.Channel(bg, hidden); return err },
			func(a discordio.API) error { _, err := a.Channel(bg, hidden); return err }},
		{"unknown guild", 10004, func() error { _, err := f.Guild(bg, 1); return err },
			func(a discordio.API) error { _, err := a.Guild(bg, 1); return err }},
		{"unknown member", 10007, func() error { _, err := f.Member(bg, w.guild, 1); return err },
			func(a discordio.API) error { _, err := a.Member(bg, w.guild, 1); return err }},
		{"DMs closed", 50007, func() error { return f.Send(bg, dm, msg) },
			func(a discordio.API) error { return a.Send(bg, dm, msg) }},
		{"invalid recipient", 50033, func() error { _, err := f.OpenDM(bg, 1); return err },
			func(a discordio.API) error { _, err := a.OpenDM(bg, 1); return err }},
		{"missing permissions", 50013, func() error {
			f.SetOverwrites(w.channel, discord.MemberPermissionOverwrite{UserID: f.BotID(), Deny: discord.PermissionSendMessages})
			defer f.SetOverwrites(w.channel)
			return f.Send(bg, w.channel, msg)
		}, func(a discordio.API) error { return a.Send(bg, w.channel, msg) }},
		{"already acknowledged", 40060, func() error { return f.Respond(bg, acked.ID(), acked.Token(), deferral) },
			func(a discordio.API) error { return a.Respond(bg, acked.ID(), acked.Token(), deferral) }},
		{"unknown interaction", 10062, func() error { return f.Respond(bg, late.ID(), late.Token(), deferral) },
			func(a discordio.API) error { return a.Respond(bg, late.ID(), late.Token(), deferral) }},
		{"unknown webhook", 10015, func() error { return f.EditOriginal(bg, expired.Token(), text("x")) },
			func(a discordio.API) error { return a.EditOriginal(bg, expired.Token(), text("x")) }},
	}
	for _, c := range cases {
		fakeErr := c.fake()
		want, ok := discordio.AsError(fakeErr)
		if !ok || want.Code != c.code {
			t.Fatalf("%s: the Fake answered %v, want code %d", c.name, fakeErr, c.code)
		}
		// Discord's answer, as the Fake describes it.
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			rw.Header().Set("Via", "1.1 google")
			rw.WriteHeader(want.Status)
			_ = json.NewEncoder(rw).Encode(map[string]any{"code": want.Code, "message": want.Message})
		}))
		r := discordio.NewREST(discordio.RESTConfig{Token: "token", AppID: f.AppID(), URL: srv.URL})
		restErr := c.rest(r)
		r.Close(bg)
		srv.Close()

		got, ok := discordio.AsError(restErr)
		if !ok || got.Status != want.Status || got.Code != want.Code {
			t.Fatalf("%s: REST answered %v, the Fake %v", c.name, restErr, fakeErr)
		}
		for _, cl := range []struct {
			name string
			is   func(error) bool
		}{{"NotFound", discordio.NotFound}, {"Forbidden", discordio.Forbidden}, {"DMRefused", discordio.DMRefused}, {"Refused", discordio.Refused}} {
			if cl.is(fakeErr) != cl.is(restErr) {
				t.Errorf("%s: %s is %v for the Fake, %v for REST", c.name, cl.name, cl.is(fakeErr), cl.is(restErr))
			}
		}
	}
}
