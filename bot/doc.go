// Package bot is pinbot's Discord side: the commands that pin images from
// Discord messages to the user's Pinterest account, within the limit of
// 100 pins per rolling 12 hours per Pinterest account that the rate-limit
// engine (package actors) keeps exactly.
//
// The texts below are those of the default rule. The bot takes the limit
// and the window from the engine (actors.Config's Limit and Window) and
// names them in every text: under 50 pins per 90 minutes, "Pin limit
// reached (100/12h)" and "12-hour pin count" read "Pin limit reached
// (50/1h30m)" and "90-minute pin count" (WindowShort, WindowAdjective).
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
//   - /settings lists the user's linked accounts with "12-hour pins:
//     X/100", the active one and each default board, with a menu to switch
//     the active account and one to choose its default board.
//   - /queue lists, per linked account, the queued pins the user may see
//     (every pin of an account the user has linked, and the pins the user
//     queued): the running ones, the waiting ones with their start times
//     and message links, and the last results (pinned, failed, may
//     exist), within one message. A menu cancels the waiting pins of one
//     message, a button per account all its waiting pins; either edits the
//     list in place, and is checked again against the user's links when
//     used, so another user's pins on an account the user has not linked
//     are never canceled.
//   - /link answers with Pinterest's authorization address, and says how
//     the board pins go to is chosen; /unlink account: removes a link.
//     Once the OAuth callback (bot/web) stores a link, or refuses one for
//     missing scopes, Bot.Linked or Bot.LinkRefused tells the user who
//     ran /link: in the /link reply while its token lives, else by DM.
//
// Replies write every instant one way (timeText): Discord's exact time,
// which it renders in the reader's time zone, beside the relative one
// ("at <t:…:T> (<t:…:R>)"), rounded up to the second; select menus, which
// show no markdown, show that second in UTC and the wait to it. Every
// count of an account ("12-hour pins: X/100") holds the slots in use and
// those that a rule in force before a change of the limit, or a restore,
// still holds: /pin refuses both alike.
//
// /pin reads the named messages over REST, where Discord leaves out the
// attachments and embeds of other users' messages unless the application
// has the message content intent enabled (a privileged intent, granted
// in the developer portal); "Pin to Pinterest" works without it.
//
// # One /pin
//
// Once the interaction is acknowledged (see below), a batch first checks
// everything that can refuse it whole, in this order: the active account,
// read from the user's links and checked to be one of them, not marked
// for re-linking, with a token that loads (a token Pinterest refused marks
// the account for re-linking); the board, the board: option found by ID or
// name among the account's boards (a list kept for a minute) or else the
// account's default; for /pin, the user's right to view and read the
// history of every channel named; and the account's status in the engine,
// refused at its limit with when the next slot frees ("Pin limit reached
// (100/12h), so nothing was pinned ..."), or while a Pinterest 429 holds
// it.
//
// Then, for each message in order, it fetches the message fresh over REST
// (signed attachment URLs expire; "Pin to Pinterest" uses the message
// Discord handed over), and for each of its images, up to MaxPinsPerBatch
// in all:
//
//  1. reserves one slot of the account's 100 (none left: "Pin limit
//     reached (100/12h). Skipped remaining pins." after some pins, "Pin
//     limit reached (100/12h), so nothing was pinned" before any, and what
//     remains is skipped, or queued with when_full:queue: "Pin limit
//     reached (100/12h). Queued the remaining 4 pins: ..."), on a context
//     the handler's end does not cancel, so a granted slot is never lost;
//  2. POSTs the pin, every request for it (a token refresh included)
//     bounded to end Config.SlotMargin before the slot's deadline;
//  3. commits the slot if Pinterest made the pin ("12-hour pin count:
//     X/100"); leaves it unresolved if the outcome is unknown
//     (pinterest.ErrOutcomeUnknown, unless the request never left), so the
//     engine counts it as a pin made at the end of its lease; releases it
//     if the pin surely was not made.
//
// A 429 holds the account in the engine until Pinterest's reset, and so
// does a pin the client held back because Pinterest's rate-limit headers
// said the account had no request left; a refused grant marks the account
// for re-linking; these, an unknown outcome and an unreachable Pinterest
// (its circuit breaker open included) stop the batch, and what remains is
// skipped. The
// reply lists every image pinned (with its Pinterest URL), failed or
// skipped, and why.
//
// # Interactions under load
//
// Every command and component interaction is acknowledged at once with a
// deferred ephemeral response (a /queue component with a deferred update
// of the message it is on), on the goroutine disgo starts for the event
// (async events), before anything else. It is then charged to its user's
// allowance (Config.UserRate: a /pin one unit per image, anything else
// one); over it, the user is told when to try again. The work then waits
// for one of Config.Workers workers, so a burst of thousands of commands
// queues instead of running at once, while every interaction meets
// Discord's 3-second deadline. An interaction whose acknowledgement Discord refuses
// (too late, or already acknowledged, as when an event is delivered
// twice) is not worked on, so no command runs twice. Autocomplete, which
// cannot be deferred, answers within two seconds from a cache of each
// account's boards.
//
// Close closes the gateway first, tells the users whose commands were
// acknowledged but not started to run them again, waits for running
// handlers (up to Config.CloseTimeout), cancels those still running, and
// closes disgo's client once none runs (if some still run after a short
// grace, it leaves the client open and says so in its error).
//
// # Talking to Discord
//
// Package discordio sets up how the disgo client talks to Discord: REST
// requests go through the bot's own rate limiter (disgo v0.19.6's ignores
// Discord's global 429 and held interaction callbacks to it) over a bounded
// pool of connections, and New makes disgo decode with go-json
// (discordio.InstallDecoder, a process-wide setting: disgo offers no
// other).
//
// # Metrics and health
//
// Config.Observer learns what became of every picture (result and reason),
// how each interaction ended and how long its acknowledgement took, and
// each gateway shard's READY and RESUMED; Config.DiscordTransport wraps the
// REST client's transport. Shards reports whether each shard is connected
// without waiting on disgo's shard manager. Package internal/metrics turns
// them into Prometheus metrics, and internal/app into readiness.
//
// # Logs
//
// The bot logs through zerolog with component=bot; disgo's slog output is
// bridged with component=disgo. Bot tokens, OAuth tokens and OAuth states
// are never logged, and interaction tokens are cut out of every line,
// disgo's included. Every message the bot sends has empty allowed_mentions.
package bot
