// Package bot is pinbot's Discord side: the commands that pin images from
// Discord messages to the user's Pinterest account, within the limit of
// 100 pins per rolling 12 hours per Pinterest account that the rate-limit
// engine (package actors) keeps exactly.
//
// # Usage
//
//	b, err := bot.New(bot.Config{
//		Token:     token,
//		Engine:    engine,    // *actors.Engine
//		Links:     store,     // *links.Store
//		Pinterest: pinClient, // *pinterest.Client
//		Log:       log,
//	})
//	if err := b.Start(ctx); err != nil { ... } // sync commands, open the gateway
//	...
//	err = b.Close(ctx) // drain handlers, then close the Discord client
//
// APIURL and GatewayURL point the bot at another Discord, such as the
// discordtest stand-in.
//
// # Commands
//
//   - /pin messages:<1 to 10 message IDs or links> [board:] pins every
//     image of the messages. Bare IDs name messages of the channel the
//     command runs in; links must point into the same server. The user must
//     be able to view, and read the history of, every channel named,
//     computed from the guild's roles and the channel's overwrites fetched
//     over REST. Each image (an image attachment or an image embed) is one
//     pin and one slot of the account's 100; one command pins at most
//     MaxPinsPerBatch images, in the order given.
//   - "Pin to Pinterest", a message command, does the same for one
//     message, which Discord hands over with the command.
//
// /pin reads the named messages over REST, where Discord leaves out the
// attachments and embeds of other users' messages unless the application
// has the message content intent enabled (a privileged intent, granted
// in the developer portal); "Pin to Pinterest" works without it.
//   - /settings lists the user's linked accounts with "12-hour pins:
//     X/100", the active one and each default board, with a menu to switch
//     the active account and one to choose its default board.
//   - /link answers with Pinterest's authorization address, and says how
//     the board pins go to is chosen; /unlink account: removes a link.
//
// # One /pin
//
// The active account is read from the user's links and checked to be one
// of them. If it is at its limit the whole batch is refused with when the
// next slot frees. Then, for each image: reserve one slot (none left:
// "Pin limit reached (100/12h). Skipped remaining pins." after some
// pins, "Pin limit reached (100/12h), so nothing was pinned." before
// any), fetch the message fresh (signed attachment URLs expire), POST the
// pin, and commit the slot ("12-hour pin count: X/100") if the pin exists
// or may exist (pinterest.ErrOutcomeUnknown), or release it if it surely
// does not. A 429 holds the account in the engine until Pinterest's reset;
// a refused grant marks the account for re-linking. The reply lists every
// image pinned (with its Pinterest URL), failed or skipped, and why.
//
// # Interactions under load
//
// Every command and component interaction is acknowledged at once with a
// deferred ephemeral response, on the goroutine disgo starts for the event
// (async events), before anything else. The work then waits for one of
// Config.Workers workers, so a burst of thousands of commands queues
// instead of running at once, while every interaction meets Discord's
// 3-second deadline. An interaction whose acknowledgement Discord refuses
// (too late, or already acknowledged, as when an event is delivered
// twice) is not worked on, so no command runs twice. Autocomplete, which cannot be deferred, answers
// within two seconds from a cache of each account's boards.
//
// Close closes the gateway first, then waits for running handlers (up to
// Config.CloseTimeout) before closing disgo's client: disgo v0.19.6's REST
// rate limiter deadlocks if closed with requests in flight.
//
// # Logs
//
// The bot logs through zerolog with component=bot; disgo's slog output is
// bridged with component=disgo. Bot tokens, OAuth tokens and OAuth states
// are never logged, and interaction tokens are cut out of every line,
// disgo's included. Every message the bot sends has empty allowed_mentions.
package bot
