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
//		Engine:    engine,         // *actors.Engine
//		Links:     store,          // the links and tokens store (package links)
//		Outbox:    store.Outbox(), // keeps the digests' lines until sent
//		Pinterest: pinClient,      // *pinterest.Client
//		Log:       log,
//	})
//	err = engine.ServeJobs(b.RunJob)            // run the queued pins
//	if err := b.Start(ctx); err != nil { ... } // sync commands, open the gateway
//	...
//	err = b.Close(ctx) // drain handlers, send gathered digests, close the Discord client
//
// APIURL and GatewayURL point the bot at another Discord, such as the
// discordtest stand-in.
//
// # Commands
//
//   - /pin messages:<1 to 10 message IDs or links> [board:] [when_full:]
//     pins every image of the messages. Bare IDs name messages of the
//     channel the command runs in; links must point into the same server.
//     The user must be able to view, and read the history of, every
//     channel named, computed from the guild's roles and the channel's
//     overwrites fetched over REST. Each image (an image attachment or an
//     image embed) is one pin and one slot of the account's 100; one
//     command pins at most MaxPinsPerBatch images, in the order given.
//     when_full says what to do with the images the limit refuses: skip
//     them, or queue them to be pinned as slots free; without it, the
//     user's choice in /settings (skip unless changed).
//   - "Pin to Pinterest", a message command, does the same for one
//     message, which Discord hands over with the command, with the
//     user's when_full choice.
//   - /settings lists the user's linked accounts with "12-hour pins:
//     X/100", the active one and each default board, with menus to switch
//     the active account, to choose its default board, and to choose what
//     /pin and "Pin to Pinterest" do at the limit by default (skip or
//     queue the rest).
//   - /queue lists, per linked account, the queued pins the user may see
//     (every pin of an account the user has linked, and the pins the user
//     queued): the running ones, the waiting ones with their start times
//     and message links, and the last results (pinned, failed, may
//     exist), within one message. A menu cancels the waiting pins of one
//     message, a button per account all its waiting pins; either edits the
//     list in place, and is checked again against the user's links when
//     used, so another user's pins on an account the user has not linked
//     are never canceled.
//   - /link answers with Pinterest's authorization address (single use,
//     bound to the user, short lived), and says how the board pins go to
//     is chosen. Once the OAuth callback (bot/web) stores a link, Bot.Linked
//     sends the notice: which account is now linked and active, and to run
//     /unlink at once if that was not the user (whoever opens the address
//     can approve with their own account); Bot.LinkRefused says when
//     nothing was linked for missing scopes. The notice edits the /link
//     reply while its token lives, else goes by DM.
//   - /unlink account: removes a link, cancels the user's waiting pins on
//     that account (a re-link does not bring them back) and names the
//     active account left.
//   - /server [pin_emoji:] shows the server's settings, or sets the
//     emoji of its pin reactions ("reset": the bot's). Offered by default
//     to members with Manage Server, and refused on use to anyone without
//     it (or Administrator); see server.go.
//
// Replies write every instant one way (timeText): Discord's exact time,
// which it renders in the reader's time zone, beside the relative one
// ("at <t:…:T> (<t:…:R>)"), rounded up to the second; select menus, which
// show no markdown, show that second in UTC and the wait to it. Every
// count of an account ("12-hour pins: X/100") holds the slots in use and
// those that a rule in force before a change of the limit, or a restore,
// still holds: /pin treats both alike.
//
// /pin reads the named messages over REST, where Discord leaves out the
// attachments and embeds of other users' messages unless the application
// has the message content intent enabled (a privileged intent, granted
// in the developer portal); "Pin to Pinterest" works without it.
//
// # Pin reactions
//
// A linked user's pin reaction (the server's emoji, set with /server;
// otherwise Config.PinEmoji, 📌 unless set) on a
// guild message pins its pictures as "Pin to Pinterest" does: the active
// account and its default board, the user's when_full choice, at most
// MaxPinsPerBatch pictures, charged to the user's allowance (reactions.go).
// The gateway, which then asks for the Guild Message Reactions intent
// (none with Config.NoReactions), hands each MESSAGE_REACTION_ADD and
// _REMOVE to HandleReaction on its reading goroutine, which only files
// it: the events of one user on one message run in the order they came,
// on a goroutine of their own that takes one of the Config.Workers.
// There is no interaction to answer, so the report goes by DM (to the
// channel, mentioning the user without a ping, when their DMs are
// closed; else to their digest). Taking the reaction off cancels the
// pins of that message the user queued that still wait; pins made stay.
// A user with no linked account is told about /link by DM once a day at
// most. What this keeps (the users told, the channels replied in, the
// events seen lately, the reactions under way) is in memory, bounded,
// and forgotten at a restart. ReactionObserver counts the outcomes.
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
// history of every channel named. Then, when the batch skips at the
// limit, the account's status in the engine: at its limit, or with pins
// queued (which a new pin may not overtake), the batch is refused with
// when the next slot frees ("Pin limit reached (100/12h), so nothing was
// pinned ..."), and so it is while a Pinterest 429 holds the account.
// When it queues, nothing is refused here: what finds no slot is queued.
//
// Then, for each message in order, it fetches the message fresh over REST
// (signed attachment URLs expire; "Pin to Pinterest" uses the message
// Discord handed over), and for each of its images, up to MaxPinsPerBatch
// in all:
//
//  1. reserves one slot of the account's 100, on a context the handler's
//     end does not cancel, so a granted slot is never lost. None left
//     (the limit, or Pinterest's hold): when skipping, the rest is
//     skipped, with why ("Pin limit reached (100/12h). Skipped remaining
//     pins." after some pins, "Pin limit reached (100/12h), so nothing
//     was pinned" before any); when queueing, this image and every later
//     one are queued (below);
//  2. POSTs the pin, every request for it (a token refresh included)
//     bounded to end Config.SlotMargin before the slot's deadline;
//  3. commits the slot if Pinterest made the pin ("12-hour pin count:
//     X/100"); leaves it unresolved if the outcome is unknown
//     (pinterest.ErrOutcomeUnknown, unless the request never left), so the
//     engine counts it as a pin made at the end of its lease; releases it
//     if the pin surely was not made.
//
// A picture pinned to the board before is not pinned again (history.go):
// the reply says "already pinned" with the pin's address and no slot is
// used, unless /pin's again:true says otherwise.
//
// Every pin carries its slot's mark in its link. A pin of unknown outcome
// is then looked for in the account's pins on Pinterest, after the reply
// (resolve.go): found, its slot is committed at the pin's own time and
// the user told it was pinned; proven never made, its slot is released
// and the user told so; a search that fails leaves the slot to count at
// its deadline. Queued pins, and those a restart left running, are
// settled the same way, a queued pin never made going back to the queue.
//
// A 429 holds the account in the engine until Pinterest's reset, and so
// does a pin the client held back because Pinterest's rate-limit headers
// said the account had no request left; a refused grant marks the account
// for re-linking; these, an unknown outcome and an unreachable Pinterest
// (its circuit breaker open included) stop the batch, and what remains is
// skipped, whatever when_full says. The reply lists every image pinned
// (with its Pinterest URL), failed, queued or skipped, and why.
//
// # Queued pins and digests
//
// The images a batch queues go to the engine in one durable write
// (actors.Engine.Enqueue), as references (guild, channel, message, image
// position, user, board; never the CDN URL, which expires), behind the
// pins the account has queued already, up to the account's queue size
// (actors.Config.MaxQueue; the rest is skipped). Each gets its exact start
// time from the engine, the instant a slot frees for it and every pin
// ahead: the reply says when the first and the last start ("Pin limit
// reached (100/12h). Queued the remaining 4 pins: the first starts at
// ..."), and /queue shows each. The times move only when something
// changes (a release, a cancel, a hold, a pin later than its start).
//
// At its start the engine reserves the pin's slot and hands it to
// RunJob, which fetches the message again and checks, as /pin does, that
// the user still links the account, that Pinterest accepts its grant, and
// that the message, the image and the user's access to the channel are
// still there; then it pins under the slot's send deadline. A pin handed
// out again after a restart is never sent again: it is reported as "may
// exist". Passing failures before anything was sent put it back at the
// head of its queue; anything else ends it, with why.
//
// The interaction token of the command is dead by then (15 minutes), so
// results reach the user as digests (package digest): the lines of one
// user gathered for a minute, sent by DM or, when the user's DMs are
// closed, in the channel where each command ran, if the user may still
// view it and read its history (else the line stays in /queue only). A
// line is kept durably (Config.Outbox) from before the engine records
// the pin's outcome until Discord accepts a message carrying it, so a
// crash loses no result.
//
// # Interactions under load
//
// Every command and component interaction is acknowledged at once with a
// deferred ephemeral response (a /queue component with a deferred update
// of the message it is on), on the goroutine the gateway starts for the
// interaction (HandleInteraction), before anything else. It is then charged to its user's
// allowance (Config.UserRate: a /pin one unit per image, anything else
// one); over it, the user is told when to try again. The work then waits
// for one of Config.Workers workers, so a burst of thousands of commands
// queues instead of running at once, while every interaction meets
// Discord's 3-second deadline. An interaction whose acknowledgement
// Discord refuses (too late, or already acknowledged, as when an event is
// delivered twice) is not worked on, so no command runs twice. Autocomplete, which
// cannot be deferred, answers within two seconds from a cache of each
// account's boards.
//
// Close closes the gateway first, tells the users whose commands were
// acknowledged but not started to run them again, waits for running
// handlers (up to Config.CloseTimeout), cancels those still running,
// sends the digests gathered so far, and closes the REST client once none
// runs (if some still run after a short grace, it leaves the client open
// and says so in its error).
//
// # Talking to Discord
//
// Package discordio is the adapter to Discord, and the only package of
// the bot that imports disgo's rest, gateway and sharding: every request
// goes through its API (handlers are tested on its in-memory double,
// discordiotest), the shards through its Gateway. REST requests go
// through the bot's own rate limiter (disgo v0.19.6's ignores Discord's
// global 429 and held interaction callbacks to it) over a bounded pool of
// connections, and disgo decodes with go-json (discordio.InstallDecoder,
// a process-wide setting: disgo offers no other). The command table
// (commandTable, commands.go) routes each interaction to its handler
// (router.go).
//
// # Metrics and health
//
// Config.Observer learns what became of every picture (result and reason),
// how each interaction ended and how long its acknowledgement took, and
// each gateway shard's READY and RESUMED; Config.DiscordTransport wraps the
// REST client's transport. Shards reports whether each shard is connected
// without waiting on the shard manager. Package internal/metrics turns
// them into Prometheus metrics, and internal/app into readiness.
//
// # Logs
//
// The bot logs through zerolog with component=bot; disgo's slog output is
// bridged with component=disgo. Bot tokens, OAuth tokens and OAuth states
// are never logged, and interaction tokens are cut out of every line,
// disgo's included. Every message the bot sends has empty allowed_mentions.
package bot
