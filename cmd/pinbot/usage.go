package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/sandbox"
)

// jsonFlagHelp and jsonFlagFields describe the --json flag of the accounts
// command.
const (
	jsonFlagHelp   = "print a JSON array of objects instead of a table:"
	jsonFlagFields = "{account, username and linked_by (when known), used, pending, limit, blocked, free, queued, next_free}"
)

// demoCommandsHelp lists the commands of the engine demo.
var demoCommandsHelp = fmt.Sprintf(`  pin ACCOUNT N                 make N pins (1 to %d) on ACCOUNT, as many as its limit allows
  status ACCOUNT [ACCOUNT...]   show the accounts' %s pin counts
  help                          list these commands
  quit                          stop; so do end of input, Ctrl-C and SIGTERM
`, actors.MaxBatch, windowAdjective(actors.DefaultWindow))

// dataDirHelp describes the data directory's layout.
const dataDirHelp = `Data directory (--data-dir):
  DIR/engine        the engine's store: every account's pins in the window
  DIR/links         linked accounts and their OAuth tokens, encrypted
  DIR/sandbox.key   the sandbox's key for DIR/links (created by the sandbox)
  DIR/sandbox.log   the sandbox's logs
  DIR/pinbot.sock   where the running bot or sandbox serves pinbot backup,
                    accounts and jobs
Each store admits one process at a time. DIR/links is written with one
key: the bot can use a data directory the sandbox made only with
--encryption-key-file DIR/sandbox.key.
`

// printUsage writes the help of cmd ("" for pinbot itself) to w.
func printUsage(w io.Writer, cmd string) {
	var b strings.Builder
	adj := windowAdjective(actors.DefaultWindow)
	switch cmd {
	case "accounts":
		fmt.Fprintf(&b, `Usage:
  pinbot accounts [flags]

Lists every account stored in the data directory with its %[1]s pin count
(the pins still inside the window plus the reservations not yet resolved,
pending), the slots /pin may take now (free), its queued pins and when its
next slot frees. When a limit or window in force before a change, or the
hold after a restore, still refuses slots the current limit leaves free,
free leaves them out, as /pin does, and says how many that rule holds ("2
(5 held by an earlier rule)"); the rule and its end follow the table.

When the bot or the sandbox runs on the data directory, the listing comes
from it (on DIR/pinbot.sock, which only its owner may use), with the
accounts' Pinterest usernames. Otherwise accounts reads the stores itself,
and shows the usernames when the token store can be opened (with the key of
--encryption-key-file, else DIR/sandbox.key). The listing is the same
either way. The counts are under the limit and window the data directory
was last run under. It logs warnings and errors only, unless --log-level
or PINBOT_LOG_LEVEL is given. pinbot jobs ACCOUNT lists an account's queue.
`, adj)
	case "jobs":
		b.WriteString(`Usage:
  pinbot jobs [flags] ACCOUNT

Lists the queue of one account, named by its id or by @ and its Pinterest
username: its standing (as pinbot accounts shows it), its running queued
pins with the end of their slot's lease, its waiting ones in the order they
start, each with the exact instant the engine will start it, and the results
kept of those done (pinned, with the pin's address, failed and why, or
unknown: the pin may exist and counts toward the limit). Each shows the
message, which of its pictures, the Discord user who queued it and the
board.

Like accounts, it asks the bot or sandbox running on the data directory
over DIR/pinbot.sock, and otherwise reads the stores itself, with the same
output; a username needs the token store (its key, when pinbot is not
running). An account neither stored nor linked is an error.
`)
	case "backup":
		b.WriteString(`Usage:
  pinbot backup [flags] FILE

Writes a backup of the data directory to FILE: both stores, the engine's
(pin counts, reservations, queued pins, the limit and window in force, the
clock anchor) and the token store (links and OAuth tokens, encrypted in
the backup with a key derived from the token store's own). When the bot
or the sandbox runs on the data directory, the backup is taken through it
(on DIR/pinbot.sock, which only its owner may use) while it goes on
working; otherwise backup opens the stores itself, and then needs the
token store's key (--encryption-key-file, else DIR/sandbox.key). Each
store is copied as of one instant. The file is written beside FILE under
another name, checked, then renamed: FILE is never a partial backup, and
an existing FILE is replaced only with --force. On a terminal a line shows
the bytes written.
`)
	case "restore":
		b.WriteString(`Usage:
  pinbot restore [flags] FILE

Restores the backup FILE into the data directory. It checks every
checksum of FILE, and decrypts its token store with the key the bot uses
(--encryption-key-file, else DIR/sandbox.key), before it writes anything.
A data directory that is not empty is refused unless --force is given:
then it is moved aside to DIR.before-restore-TIME, never deleted, and
refused if a pinbot is running on it. A key file inside the data
directory is copied into the restored one.

A backup holds each account's pins as of the moment it was taken; the pins
made after it are unknown. So that no slot frees early, no account (even
one the backup does not hold) is granted a pin until every pin made before
the restore has left its window: for the window plus a lease after the
restore (the longest of the windows the backup keeps in force and, when
given, of --pin-window, which should be the bot's). Queued pins that were waiting or
running when the backup was taken may have been sent since: none is sent
again, and their owners are told they may exist. The next start of the
bot or the sandbox lifts the hold account by account: once every pin made
before the restore can be listed, it lists each linked account's pins on
Pinterest and lets it pin again, up to what Pinterest's own count leaves
free; an account it cannot read (a revoked grant, a listing that fails)
waits for the hold to end, and is named in the log and on the dashboard.
See docs/design.md, "Backup and restore".
`)
	case "reconcile":
		b.WriteString(`Usage:
  pinbot reconcile [flags]

For a data directory whose engine store was lost without a backup (or
replaced by an old copy): the pins the lost runs made are unknown, so
reconcile stores in the engine store (creating it when it is gone) the
hold a restore stores. No account is granted a pin until the pins made
before have left their window (the longest of --pin-window, which should
be the bot's, and of the windows the store keeps in force, plus a lease)
unless the next start of the bot or the sandbox reads its pins from
Pinterest: once every pin made before can be listed, it lists each
linked account's pins and lets it pin again, up to what Pinterest's own
count leaves free. An account it cannot read waits for the hold to end,
and is named in the log and on the dashboard; accounts linked later are
read by the next try. A data directory a pinbot runs on is refused. See
docs/design.md, "Backup and restore".
`)
	case "cluster":
		b.WriteString(`Usage:
  pinbot cluster [flags] status
  pinbot cluster [flags] import [flags]

status reads from etcd (--etcd-endpoints) what the members of a pinbot
cluster keep there, without joining it: the settings the first member
stored, the live members with their addresses and the partitions each
holds, and the partitions without an owner.

import moves a single process's data directory into the cluster's etcd;
pinbot cluster import --help says how. See docs/design.md, "Several
processes".

Both reach etcd as a member does: over https:// endpoints with TLS 1.2
or later, checking etcd's certificate against --etcd-ca-file (else the
system's roots) and showing the client certificate of --etcd-cert-file
and --etcd-key-file, where etcd asks for one (docs/deploy.md).
`)
	case "cluster import":
		b.WriteString(`Usage:
  pinbot cluster import [flags]

Moves a single process's data directory (--data-dir) into the etcd of a
cluster (--etcd-endpoints), for its members to run on: every account's
pins, reservations, holds and queued pins, the rules in force and the
high-water mark, written as a member writes them; the links, the OAuth
tokens, the pictures pinned, the pins made elsewhere and the digest
lines not yet delivered, sealed with the encryption key. Queued pins
that were running come back to their new owner as recovered: counted,
never sent again. Links in progress (an OAuth state) are not moved: the
user runs /link again. Nothing in the data directory is changed or
deleted.

It refuses, writing nothing, while a member runs (it names them) or a
member's partitions have yet to be released; while a pinbot runs on the
data directory; when the cluster's settings differ from the data
directory's rule (pin limit, window, lease) or keys (each difference is
named); and when etcd already holds state or links of an account or
user being imported (it names a few and counts the rest). It never
merges two histories of one account: their reservation ids, queued pin
ids and tokens would collide, and which token still works is unknown.
Without stored settings it stores them, as the first member would, with
the data directory's rule, the keys and --shards.

Run it once every member is stopped, and start the members after it
reports success. An import interrupted midway (etcd unreachable) says
so: run it again with the same data directory; what the first run wrote
is recognised, being the same values, and the rest is written. With
--dry-run it checks and counts, and writes nothing.
`)
	case "invite":
		fmt.Fprintf(&b, `Usage:
  pinbot invite [flags]

Prints the address at which a server manager adds the bot to a server:
Discord's authorization page for the application of the bot token
(%[1]s), with the scopes bot and applications.commands and the
least permissions the bot needs: View Channel and Read Message History,
to read the messages /pin names; Send Messages and Send Messages in
Threads, to post the results of queued pins in the channel of their
command when their user accepts no direct message. It only reads the
token: it connects to nothing.
`, discordTokenEnv)
	case "demo":
		b.WriteString(`Usage:
  pinbot demo [flags]

An interactive demo of the rate-limit engine alone, on the engine store of
the data directory (DIR/engine), reading one command per line from stdin:

` + demoCommandsHelp)
	default:
		fmt.Fprintf(&b, `pinbot pins images from Discord to Pinterest, keeping every Pinterest account
within %[1]d pins in any rolling %[2]s (--pin-limit, --pin-window).

Usage:
  pinbot [flags]                       with %[4]s: run the bot; without: the local sandbox
  pinbot [flags] accounts [flags]      list the stored accounts and their %[3]s pin counts
  pinbot [flags] jobs [flags] ACCOUNT  list an account's queued pins and their start times
  pinbot [flags] demo [flags]          an interactive demo of the rate-limit engine alone
  pinbot [flags] backup [flags] FILE   back up the data directory to FILE, while pinbot runs too
  pinbot [flags] restore [flags] FILE  restore the backup FILE into the data directory
  pinbot [flags] reconcile [flags]     after the data directory was lost: count each account's pins from Pinterest
  pinbot [flags] cluster status        what etcd says of a cluster of pinbots (--etcd-endpoints)
  pinbot [flags] cluster import        move the data directory into a cluster's etcd
  pinbot [flags] invite [flags]        print the address that adds the bot of %[4]s to a server
  pinbot help [command]                show this help, or the help of a command
`, actors.DefaultLimit, windowNoun(actors.DefaultWindow), adj, discordTokenEnv)
	}

	b.WriteString("\nFlags (a flag wins over its environment variable):\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	switch cmd {
	case "accounts":
		fmt.Fprintf(tw, "  --json\t%s\n", jsonFlagHelp)
		fmt.Fprintf(tw, "  \t%s\n", jsonFlagFields)
	case "jobs":
		fmt.Fprintf(tw, "  --json\t%s\n", jobsJSONHelp)
		fmt.Fprintf(tw, "  \t%s\n", jobsJSONFields)
	case "backup":
		fmt.Fprintf(tw, "  --force\t%s\n", forceBackupHelp)
	case "restore":
		fmt.Fprintf(tw, "  --force\t%s\n", forceRestoreHelp)
	case "cluster import":
		fmt.Fprintf(tw, "  --dry-run\t%s\n", dryRunHelp)
	}
	opts := commandOptions(cmd)
	if cmd == "cluster import" {
		opts = clusterImportOptions
	}
	for _, o := range opts {
		def := o.defHelp
		if cmd == "invite" && o == &discordTokenOption {
			def = "none" // invite needs the token; it never runs the sandbox
		}
		if o.def != "" {
			def = fmt.Sprintf("%q", o.def)
		}
		fmt.Fprintf(tw, "  --%s %s\t%s\n", o.flag, o.arg, o.help)
		fmt.Fprintf(tw, "  \tenv %s, default %s\n", o.env, def)
	}
	fmt.Fprintf(tw, "  -h, --help\tshow this help\n")
	tw.Flush() // writes to a strings.Builder, which cannot fail

	if cmd == "" {
		fmt.Fprintf(&b, `
Secrets (%[1]s, PINTEREST_CLIENT_SECRET) are better set in the
environment: flags show in process lists. Logs never show them.

The bot (%[1]s set) also needs PINTEREST_CLIENT_ID,
PINTEREST_CLIENT_SECRET, PINBOT_PUBLIC_URL and PINBOT_ENCRYPTION_KEY_FILE.
Register PINBOT_PUBLIC_URL/oauth/callback as the app's redirect URI with
Pinterest; the bot serves it on PINBOT_HTTP_ADDR. The key file holds 16, 24
or 32 random bytes and must be readable by its owner only; create one with
  head -c 32 /dev/urandom > pinbot.key && chmod 600 pinbot.key
With PINBOT_ADMIN_TOKEN_FILE, the bot also serves an operator dashboard at
/admin on PINBOT_HTTP_ADDR (sign in at /admin/login with the file's token);
create one with
  head -c 24 /dev/urandom | base64 > admin.token && chmod 600 admin.token
The bot runs until SIGINT or SIGTERM, then stops in order: the bot (running
commands finish), the HTTP listener, the engine (it writes every account's
state), the stores. A second signal kills it at once.

A change of --pin-limit or --pin-window between runs never frees a slot
early: until the pins made under the earlier limit and window have left
that window, a slot is free only if both rules leave one (see
docs/design.md).

Without %[1]s, pinbot starts the local sandbox: the bot between
stand-ins of Discord and Pinterest on loopback, with a demo server and
users, and a console on stdin and stdout. Its state lives in the data
directory, its logs in DIR/sandbox.log. Console commands, one per line:
%[2]s
%[3]s
Environment:
  NO_COLOR   when set, logs written to a terminal are not colored

Exit status: 0 on a clean stop (quit, end of input, SIGINT, SIGTERM), 1 when
something failed at run time (a store in use or unreadable, the HTTP address
taken, Discord refusing to start), 2 on a usage error: a bad flag or
variable, a missing or bad key file.
`, discordTokenEnv, sandbox.Commands, dataDirHelp)
	}
	io.WriteString(w, b.String())
}
