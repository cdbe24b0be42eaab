// Command pinbot runs the Discord bot that pins images to Pinterest, keeping
// every Pinterest account within 100 pins in any rolling 12 hours.
//
// This version has no Discord bot built in yet. Without a command, pinbot
// runs an interactive demo of the rate-limit engine over the durable store
// in its data directory; the accounts command lists what that store holds.
//
// # Usage
//
//	pinbot [flags]             run the engine demo, reading commands from stdin
//	pinbot accounts [flags]    list the stored accounts and their pin counts
//	pinbot help [command]      show the help of pinbot or of a command
//
// Every flag can also be set from the environment; a flag given on the
// command line wins over its environment variable:
//
//	--data-dir DIR      PINBOT_DATA_DIR   directory of the store (./data)
//	--log-level LEVEL   PINBOT_LOG_LEVEL  trace, debug, info, warn, error
//	                                      or disabled (info)
//	--json                                accounts only: print JSON
//
// The demo reads one command per line:
//
//	pin ACCOUNT N                make N pins (1 to 10) on ACCOUNT
//	status ACCOUNT [ACCOUNT...]  show the accounts' 12-hour pin counts
//	help                         list the commands
//	quit                         stop
//
// End of input, SIGINT and SIGTERM stop it too; every stop closes the engine
// (each account's state is written durably) and then the store.
//
// The store admits one process at a time: while the demo (or, later, the
// bot) runs on a data directory, accounts on the same directory fails with
// "data directory is in use by another pinbot process".
//
// Logs go to stderr: human-readable when stderr is a terminal, JSON lines
// otherwise. Replies of the demo and listings go to stdout.
//
// pinbot exits with status 0 on success, 1 when something failed (the store
// could not be opened or closed, an account could not be read), and 2 on a
// usage error or when DISCORD_TOKEN is set, since the Discord bot is not
// built into this version.
package main
