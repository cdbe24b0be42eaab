// Command pinbot runs the Discord bot that pins images to Pinterest, keeping
// every Pinterest account within 100 pins in any rolling 12 hours, or the
// limit and window its settings give.
//
// With DISCORD_TOKEN set, pinbot runs the bot. Without it, it runs the
// local sandbox (package internal/sandbox): the same bot between
// stand-ins of Discord and Pinterest on loopback, with a demo server and
// a console on stdin and stdout where a person plays the Discord users.
//
// # Usage
//
//	pinbot [flags]                       the bot, or the sandbox
//	pinbot [flags] accounts [flags]      list the stored accounts and their pin counts
//	pinbot [flags] jobs [flags] ACCOUNT  list an account's queued pins and their start times
//	pinbot [flags] demo [flags]          an interactive demo of the engine alone
//	pinbot [flags] backup [flags] FILE   back up the data directory, while pinbot runs too
//	pinbot [flags] restore [flags] FILE  restore a backup into the data directory
//	pinbot [flags] invite [flags]        print the address that adds the bot to a server
//	pinbot help [command]                show the help of pinbot or of a command
//
// # Configuration
//
// Every setting has a flag and an environment variable; a flag given on
// the command line wins. Secrets are better set in the environment: flags
// show in process lists.
//
//	--data-dir DIR                PINBOT_DATA_DIR             data directory (./data)
//	--log-level LEVEL             PINBOT_LOG_LEVEL            trace, debug, info, warn, error, disabled (info)
//	--discord-token TOKEN         DISCORD_TOKEN               runs the bot when set
//	--pinterest-client-id ID      PINTEREST_CLIENT_ID         Pinterest app id (bot: required)
//	--pinterest-client-secret S   PINTEREST_CLIENT_SECRET     Pinterest app secret (bot: required)
//	--http-addr HOST:PORT         PINBOT_HTTP_ADDR            OAuth callback, /healthz, /readyz, /metrics (127.0.0.1:8080)
//	--public-url URL              PINBOT_PUBLIC_URL           public address of that listener (bot: required)
//	--encryption-key-file FILE    PINBOT_ENCRYPTION_KEY_FILE  key of the token store (bot: required)
//	--discord-api-url URL         PINBOT_DISCORD_API_URL      Discord REST base (https://discord.com/api/v10)
//	--discord-gateway-url URL     PINBOT_DISCORD_GATEWAY_URL  gateway address (Discord's recommendation)
//	--pinterest-api-url URL       PINBOT_PINTEREST_API_URL    Pinterest API base (https://api.pinterest.com/v5)
//	--pinterest-oauth-url URL     PINBOT_PINTEREST_OAUTH_URL  authorization page (https://www.pinterest.com/oauth/)
//	--discord-client-secret S     PINBOT_DISCORD_CLIENT_SECRET  set: sign in with Discord before a link (none)
//	--discord-oauth-url URL       PINBOT_DISCORD_OAUTH_URL    Discord's authorization page (https://discord.com/oauth2/authorize)
//	--shards N                    PINBOT_SHARDS               gateway shards; 0: Discord's recommendation (0)
//	--pin-limit N                 PINBOT_PIN_LIMIT            pins per account in any window, 1 to 65536 (100)
//	--pin-window DURATION         PINBOT_PIN_WINDOW           the rolling window, 1s to 596h31m23.648s (12h)
//	--admin-token-file FILE       PINBOT_ADMIN_TOKEN_FILE     token of the dashboard at /admin (bot; none: no dashboard)
//	--json                                                    accounts and jobs: print JSON
//	--force                                                   backup: replace FILE; restore: move a non-empty DIR aside
//
// The limit and the window are the bot's, the sandbox's and the demo's;
// accounts lists the counts under those the data directory was last run
// under. After a change, the pins made under the earlier limit and window
// still count as they say until they have left that window (see
// docs/design.md, "Changing the limit or the window").
//
// Errors name the flag or variable at fault and never show a secret; the
// bot checks its whole configuration, key file included, before it opens
// or logs anything, and lists every problem found at once. The
// OAuth redirect address to register with Pinterest is PINBOT_PUBLIC_URL
// followed by /oauth/callback; the bot serves it on PINBOT_HTTP_ADDR. A
// link is stored only once the browser confirms it on the page that
// follows; with PINBOT_DISCORD_CLIENT_SECRET set, the browser must first
// sign in with Discord as the user who ran /link, and the redirect to
// register with the Discord application is PINBOT_PUBLIC_URL followed by
// /oauth/discord.
//
// The key file holds exactly 16, 24 or 32 random bytes (AES-128, -192,
// -256): pinbot refuses to start without one, and refuses one that its
// group or others may read or write (as ssh refuses such a private key);
// create one with
//
//	head -c 32 /dev/urandom > pinbot.key && chmod 600 pinbot.key
//
// The admin token file, when given, holds one line of at least 16
// printable characters (its line break is dropped) and, like the key
// file, is refused when its group or others may read or write it: the
// bot then serves
// the operator dashboard at /admin on PINBOT_HTTP_ADDR to requests
// carrying it as a Bearer token, and to browsers signing in at
// /admin/login (package internal/dashboard).
//
// # Data directory
//
//	DIR/engine       the engine's store: every account's pins (Badger)
//	DIR/links        linked accounts and OAuth tokens (Badger, encrypted)
//	DIR/sandbox.key  the sandbox's key for DIR/links, made by the sandbox
//	DIR/sandbox.log  the sandbox's logs
//	DIR/pinbot.sock  the running bot's or sandbox's control socket
//
// Each store admits one process at a time: a second pinbot on the same
// directory fails with "data directory is in use by another pinbot
// process". DIR/links is written with one key, so the bot can use a
// directory the sandbox made only with --encryption-key-file
// DIR/sandbox.key. A directory holding the engine's files directly, as the
// first versions of pinbot wrote it, is refused with a message saying to
// move them into DIR/engine.
//
// # Accounts and jobs
//
// `pinbot accounts` lists every stored account: its Pinterest username
// when known, its pin count and pending reservations, the slots /pin may
// take now (those an earlier rule still holds, after a change of the
// limit or the window or a restore, and those Pinterest asked to wait,
// counted out, with the rules in force after the table), its queued pins
// and when its next slot frees. `pinbot jobs ACCOUNT` lists one account's
// queue (ACCOUNT is its id, or @ and its username): running pins, waiting
// ones with the exact instant each starts, and the results kept of those
// done. Both ask the bot or sandbox running on the data directory over
// DIR/pinbot.sock, and read the stores themselves when none answers,
// with the same output either way (package internal/control).
//
// # Backup and restore
//
// `pinbot backup FILE` asks the bot or sandbox running on the data
// directory for a backup over DIR/pinbot.sock (a Unix socket only its
// owner may use), so that the bot goes on working; when none answers, it
// opens the stores itself. The file holds both stores, the token store's
// encrypted with a key derived from its own; it is written under another
// name, checked and renamed, and replaces an existing FILE only with
// --force. `pinbot restore FILE` checks the whole file first, refuses a
// non-empty data directory unless --force (which moves it aside, to
// DIR.before-restore-TIME) and a directory a pinbot runs on, and holds
// every account until the pins made after the backup, which it does not
// hold, have left their window (package internal/backup, docs/design.md).
//
// # Invite
//
// `pinbot invite` prints Discord's authorization address for the
// application of the bot token (its first part is the application ID),
// with the scopes bot and applications.commands and the permissions the
// bot uses, bot.InvitePermissions. It reads nothing else and connects to
// nothing. docs/deploy.md walks through a deployment.
//
// # The bot
//
// Start: the engine store and the engine (which replays what the store
// holds), the token store, the HTTP listener (OAuth callback, /healthz,
// /readyz, /metrics), the control socket (DIR/pinbot.sock: online
// backups, the accounts and their queues), then the bot (command sync, gateway). SIGINT or SIGTERM makes
// /readyz answer 503 at once, then stops everything in reverse order,
// each step within a timeout: the bot (closing the gateway, then waiting
// for the running commands), the control socket, the HTTP listener, the engine
// (which writes every account's state), the token store, the engine
// store. A second signal kills the process at once. Expired OAuth states
// are purged every five minutes.
//
// Logs are zerolog JSON lines on stderr (human-readable when stderr is a
// terminal; NO_COLOR turns colors off). The Discord token, the Pinterest
// and Discord app secrets and the admin token are replaced by [REDACTED]
// in every line written, whichever library wrote it. The lines of one
// command carry its interaction_id; those of a queued pin its job and the
// interaction_id of the /pin that queued it; those of an HTTP request its
// request_id, also sent back in the X-Request-ID header.
//
// # The sandbox
//
// See package internal/sandbox for the demo world and the console
// commands. Its state lives in the data directory: stop it and start it
// again, and the 12-hour counts are still there. Its logs go to
// DIR/sandbox.log, not to the console. Settings only the bot uses are
// ignored, with a note on stderr.
//
// # Exit status
//
//	0  a clean stop: quit or end of input (sandbox, demo), SIGINT, SIGTERM
//	1  a failure at run time: a store in use or unreadable, the HTTP
//	   address taken, Discord or the stores failing, an unclean shutdown
//	2  a usage error: a bad flag or variable, a missing setting the bot
//	   needs, a missing or bad key file, a token store written with
//	   another key
package main
