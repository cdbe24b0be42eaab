// Package discordiotest is an in-memory double of discordio.API, the
// bot's Discord REST adapter, so that a command's handler can be tested
// without sockets: the test builds a small Discord (a Fake), hands it to
// the handler as its discordio.API, feeds the handler interactions made
// by the Fake, and reads back what the bot said. The loopback stand-in,
// bot/discordtest, remains for end-to-end tests over HTTP and the
// gateway.
//
// # Usage
//
//	func TestPinOneImage(t *testing.T) {
//		f := discordiotest.New(t)
//		g := f.AddGuild("demo")
//		ch := f.AddChannel(g)
//		alice := f.AddMember(g, 0)
//		msg := f.AddMessage(ch, discord.Message{
//			Attachments: []discord.Attachment{{Filename: "cat.png"}},
//		})
//
//		i := f.SlashCommand(discordiotest.Invocation{UserID: alice, ChannelID: ch},
//			"pin", discordiotest.Opt{Name: "messages", Value: msg.ID.String()})
//		handle(ctx, f, i) // the handler under test, f as its discordio.API
//
//		if got := f.Text(i.Token()); !strings.Contains(got, "Pinned 1 image") {
//			t.Fatalf("reply = %q", got)
//		}
//	}
//
// # The world
//
// AddGuild makes a guild whose @everyone role (the guild's ID) has
// DefaultEveryone, with a fresh owner and the bot as members; AddRole,
// AddMember, AddChannel (with permission overwrites), AddThread (public
// or private, taking its channel's permissions) and AddMessage fill it,
// with fresh snowflake IDs and sensible defaults. SetHidden hides a
// channel from the bot, SetDMsClosed closes a user's DMs. The reads
// answer from the world; channels are built from Discord's JSON with
// discord.UnmarshalChannel, as disgo decodes them.
//
// # Interactions
//
// SlashCommand, Autocomplete, MessageCommand, Button and StringSelect
// return what discord.UnmarshalInteraction decodes from the JSON Discord
// would send: the user as a member of the guild, the channel, the user's
// permissions in it (member.permissions and channel.permissions, computed
// from roles and overwrites as Discord does), the bot's (app_permissions),
// a fresh ID stamped with the Fake's time, and a token the Fake knows.
//
// Respond takes one initial response within InteractionDeadline (then 404
// Unknown interaction, 10062; a second is 400, 40060); a message or a
// deferral makes the original response, which Original, EditOriginal and
// the first Followup after a deferral act on. A token serves for
// TokenLifetime, or until Expire: then 404 Unknown Webhook (10015). The
// Fake's time stands still unless Advance moves it, or follows the clock
// of WithClock. Response, Edits, Followups, Shown and Text read what the
// bot did with a token; Sent, DMs and Commands what it sent elsewhere.
//
// # Faults
//
// Inject makes the next n calls of an operation (Op*, or Always) fail:
// with an error (a *discordio.Error such as a 429 with RetryAfter or a
// 5xx, or a transport error), by hanging until the request's context
// ends, or after taking effect (an answer lost). Calls counts each
// operation's calls.
//
// Not modelled: Discord's rate limits (inject 429s instead), the message
// content intent, the expiry of attachment URLs, modal submissions,
// interactions outside guilds, sub-commands and options other than
// strings.
package discordiotest
