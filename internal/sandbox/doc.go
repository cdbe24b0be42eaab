// Package sandbox runs pinbot for real against stand-ins of Discord and
// Pinterest on loopback, with a console in which a person plays the
// Discord users. It is what `make run` starts when no DISCORD_TOKEN is
// set.
//
// Everything under the console is the production code: the bot (package
// bot, through disgo's sharded gateway and REST client), the rate-limit
// engine (package actors) over its durable Badger store, the encrypted
// token store (package bot/links), the Pinterest client (package
// bot/pinterest) and the OAuth callback (package bot/web) on a loopback
// port. Only Discord (bot/discordtest) and Pinterest
// (bot/pinterest/pinteresttest) are stand-ins, and they speak the real
// wire protocols.
//
// # Usage
//
//	sb, err := sandbox.Start(ctx, sandbox.Config{
//		EngineDir: "data/engine",
//		LinksDir:  "data/links",
//		KeyFile:   "data/sandbox.key",
//		AdminTokenFile: "data/admin.token", // serves the dashboard at /admin
//		Log:       fileLogger,
//	})
//	defer sb.Close(ctx)
//	con := sb.Console(os.Stdout)
//	con.Banner(ctx)
//	err = con.Serve(ctx, os.Stdin, true) // until quit, end of input or ctx
//
// # The demo world
//
// The Discord stand-in lets the sandbox choose IDs, so they are short:
//
//	server  "Pinbot sandbox" 900
//	#general 100   1001 one image, 1002 two images, 1003 an image embed,
//	               1004 text only, 1005 four images, 1006 three images
//	#art     200   2001 one image
//	#staff   300   3001 one image; only the mods role (bob) can view it
//
//	alice 11   linked @alice_pins (7001, active) and @alice_art (7002)
//	bob   12   mods role (Manage Channels, Manage Server); linked
//	           @studio_shared (7003)
//	carol 13   nothing linked
//
// The images are PNGs served by a small HTTP server on loopback, so the
// URLs the bot sends to Pinterest can be opened in a browser.
//
// The demo links are made through the real OAuth flow: the sandbox asks
// the token store for a state bound to the user (as /link does), opens
// the authorization address on the Pinterest stand-in, which signs in the
// demo account and redirects to the bot's callback, which exchanges the
// code, reads the account and shows its confirmation page. The sandbox
// runs the bot with sign-in with Discord required (the Discord stand-in's
// OAuth2 client secret), so the sandbox's browser signs in there as the
// user, then presses confirm, which stores the link.
//
// # State across runs
//
// The engine store, the token store and its key live in the directories
// given in Config and outlive the process: stop the sandbox, start it
// again, and /settings shows the same 12-hour counts. The stand-ins live
// in memory and start afresh each run with the same IDs, usernames and
// boards. The Pinterest stand-in cannot take back the tokens it issued in
// an earlier run, so at every start the sandbox links each stored
// (user, demo account) pair again through OAuth (the token store then
// holds tokens the new stand-in knows) and restores each user's active
// account; default boards are kept by the token store. Queued pins wait
// until then: those that fell due while the sandbox was stopped run
// once the accounts are linked again. The Pinterest
// stand-in's own list of pins starts empty each run: the pins of earlier
// runs are counted by the engine alone.
//
// Key file: created at the first start with 32 random bytes and mode
// 0600. Losing it makes the token store unreadable; delete the token
// store's directory with it to start over (the engine's counts are kept).
//
// # The console
//
// One command per line; the leading slash is optional:
//
//	/pin 1001 1002 [board:NAME]    /pin with message IDs (in the current
//	                               channel) or links, up to 10
//	/pin messages:<link> ...       the same, with the option named
//	/pin 1001 when_full:queue      at the limit, queue the rest
//	/pinmsg ID                     the "Pin to Pinterest" message command
//	/queue                         the queued pins, their start times, results
//	/cancel N                      pick message N (or a message ID) in the
//	                               /queue menu: cancel its waiting pins
//	/cancel all [ACCOUNT]          press /queue's "Cancel all" button (of
//	                               ACCOUNT, when several accounts have one)
//	/dms                           the direct messages the bot sent the user
//	/post [N] [TEXT]               post a message with N images (1 to 10,
//	                               default 1) in the current channel as
//	                               the user; prints its ID and link
//	/edit MESSAGE [+N]             add N images (1 by default) to a
//	                               message the user posted (an ID of the
//	                               current channel, or a link)
//	/delete MESSAGE                delete a message the user posted
//	/react MESSAGE [EMOJI]         react to a message (an ID of the
//	                               current channel, or a link) with EMOJI,
//	                               by default the server's pin emoji (📌
//	                               unless /server chose another): Pinbot
//	                               pins its images
//	/unreact MESSAGE [EMOJI]       take the reaction off: off the pin
//	                               emoji, Pinbot cancels the message's
//	                               waiting pins
//	/autopin add CHANNEL BOARD     make CHANNEL (art or #art) pin itself
//	                               to BOARD (a name or id) of the user's
//	                               active account
//	/autopin list                  the server's auto-pin channels
//	/autopin pause|resume|remove CHANNEL
//	                               change a channel's auto-pin
//	/server [pin_emoji:EMOJI|reset]
//	                               the server's settings; set or reset
//	                               its pin emoji
//	/settings                      accounts, 12-hour counts, the active one
//	/switch ACCOUNT                pick ACCOUNT in the /settings menu
//	/board BOARD                   pick the active account's default board
//	/whenfull queue|skip           pick in the /settings menu of what /pin
//	                               does at the limit when it does not say
//	/link [ACCOUNT]                run /link, then approve it on the
//	                               Pinterest stand-in signed in as ACCOUNT,
//	                               sign in with Discord and confirm
//	/unlink ACCOUNT                run /unlink
//	/as USER                       act as another demo user
//	/channel NAME                  act in another channel
//	/messages                      list the demo messages and those
//	                               posted, with their reactions
//	/pinterest                     the pins the Pinterest stand-in made
//	help                           list the commands
//	quit                           stop (so does the end of input)
//
// Each reply, and each direct message /dms lists, prints as the user
// reads it in Discord: the final content of the interaction's response
// (and its followups), with Discord's markdown resolved (bold, escapes,
// mentions, <links>, and <t:…> timestamps of every style Discord defines,
// in the reader's local zone), embeds flattened to text and select menus
// and buttons listed, each with the console command that presses it. The console waits on the
// Discord stand-in's record of the bot's responses, never on timers, with
// one exception: a reply longer than Discord's 2000 characters arrives as
// several messages and only the last one that carries components can be
// recognized as the last, so after a continuation without components the
// console waits PartWait for another.
//
// /react and /unreact change the user's reaction on the Discord
// stand-in, which sends the bot MESSAGE_REACTION_ADD or _REMOVE as
// Discord does; the bot answers by direct message in its own time, so
// the console does not wait for it: it says so, and /dms shows the
// answer. /post gives the stand-in a message with images served by the
// sandbox's image server; the stand-in chooses its ID, which the console
// prints. The stand-in sends the bot MESSAGE_CREATE, so a post in an
// auto-pin channel has its pictures queued, each with its start time,
// for the rule's owner: /queue shows them and /dms the digest of their
// results.
//
// /edit and /delete work on messages posted with /post, by their author
// only, as Discord lets only a message's author edit it (and nobody in
// the demo server has Manage Messages to delete another's). The
// stand-in sends the bot MESSAGE_UPDATE or MESSAGE_DELETE: in an
// auto-pin channel an edit has its new pictures queued, not those
// queued or pinned before, and a delete cancels the message's waiting
// pins that auto-pin or a pin reaction queued, which the bot tells their
// users by direct message. As with reactions, the console does not wait
// for the bot: /queue and /dms show what it did.
//
// /autopin and /server are the bot's slash commands, sent as Discord
// sends them: /autopin's channel option is the channel's ID, with the
// channel resolved and the user's permissions in it, which the bot
// checks. The mods role has Manage Channels and Manage Server, so bob may
// make a channel pin itself and choose the server's pin emoji; alice and
// carol are refused.
//
// Logs never reach the console: Config.Log receives them.
package sandbox
