// Package digest sends users the results of work that ran long after
// their command, such as queued pins, whose interaction token (15
// minutes) is long dead: as digests by direct message or, when their DMs
// are closed, in the channel where each command ran while they may still
// read it, without ever meeting a 429, and without losing a result to a
// crash.
//
// # Usage
//
// One Sender serves the process. It takes the bot's Discord API (what it
// calls of discordio.API: OpenDM and Send), a clock,
// a logger and, as options, an Outbox that keeps lines until they are
// sent and an Access that says who may read a channel:
//
//	s, err := digest.New(api, schedule.SystemClock(), log, digest.Config{},
//		digest.WithOutbox(outbox), digest.WithAccess(access))
//	n, err := s.Resume(ctx) // what the last run kept and did not send
//	…
//	l := digest.Line{Key: digest.Key{Account: acct, Job: id}, User: userID,
//		Guild: guildID, Channel: channelID, Text: "✅ cat.png pinned to Cats (@alice)"}
//	l, err = s.Keep(ctx, l) // durable, before the result is recorded elsewhere
//	s.Add(l)
//	…
//	err = s.Close(ctx) // sends what is gathered, then stops
//
// Add never waits for Discord. Lines for a user that arrive within
// Config.Gather (1 minute) of the first go out as one digest: the header
// ("Queued pins that ran:") and the lines, split into messages of at most
// 2000 characters between lines, never inside one. A user has one digest
// under way at a time; lines that arrive meanwhile make the next.
//
// # Where a digest goes
//
// To the user's DM channel, opened with POST /users/@me/channels and
// remembered (Config.DMCache users). When Discord answers that the user
// accepts no DM (403, code 50007), each line not sent by DM goes to the
// channel where its command ran (Line.Channel, of Line.Guild): the
// digest's lines are grouped by channel, and each channel gets its own
// messages, opening with the user's mention, so that a result never shows
// in another channel, let alone another server. Before posting in a
// channel, the Sender asks the Access whether the user may still view it
// and read its history (a channel of another guild, or gone, is a no); if
// not, or if the line names no channel, its lines are not posted anywhere:
// they are logged, counted (Stats.Withheld) and remain in /queue. For
// Config.DMsClosedFor (1 hour) the user's digests go to the channels at
// once. A channel that refuses (403 Missing Access or Permissions, 404
// Unknown Channel) drops its lines with a log line, and the next channel
// is tried. Digests never ping anyone: their allowed_mentions allow
// nothing. Without an Access, no digest goes to a channel.
//
// # Durability
//
// With an Outbox (WithOutbox), a line lives there from Keep, which the
// caller runs before it records the result anywhere else, until Discord
// accepted a message carrying it: a crash loses no line, and one between
// the send and the deletion sends it again after the restart (at least
// once). Keep keeps the first line of a key: a job reported again
// after a crash (its outcome then unknown) is told as first recorded.
// Resume, at start, gathers what the Outbox holds, as Add does. Lines
// Discord refused for good, or that no place may show, leave the Outbox
// too; lines given up after passing failures (every try failed, Close
// gave up, over Config.MaxUsers) stay for the next Resume. A failing
// Outbox is logged and counted (Stats.OutboxErrors): lines are then sent
// from memory. Add ignores a line whose key is gathered already or was
// sent lately (Config.DMCache keys remembered).
//
// A SharedOutbox serves the processes of a cluster, each line kept by
// one of them: a Sender sends only the lines its process keeps. Resume
// claims those kept under its id and those of processes that no longer
// run; every Config.Adopt (10 s) the Sender claims again the lines of
// processes gone since, and sends them (Stats.Adopted). A line Keep
// finds kept by another running process (ErrElsewhere) is left to it:
// Add ignores it.
//
// # Limits
//
// Every message goes out through one schedule.Runner, which hands it out
// at the instant its destination channel's rule (Config.Channel,
// schedule.DiscordChannel(): 5 per 5 s, a sliding log) allows, in group
// "channel:<id>": a thousand results finishing at once for many users
// sharing a fallback channel, or for one user, never exceed Discord's
// per-channel limit. Before that, every request (messages and DM
// channels) takes its turn in one group under Config.Pace (20 per second),
// which keeps a burst of digests from meeting Discord's global limit (50
// per second, shared with the bot's interactions). Pace bounds how fast
// requests are released to the channel queues; a channel holding a
// backlog releases its messages at its own rule's instants, which can
// fall together with others'. A channel's check takes its turn under
// Config.Pace too.
//
// A request is bounded by Config.SendTimeout. A 429 is tried again after
// its retry_after, a 5xx, a timeout or a broken connection after a
// backoff (Config.Backoff, doubling, up to Config.MaxBackoff), both
// through the scheduler again, at most Config.Attempts tries in all;
// then the rest of the digest is dropped with a log line. With the bot's
// REST client, disgo and the bot's rate limiter (bot/internal/discordio)
// already wait out a 429 and retry it within the request's timeout; the
// Sender sees a 429 only when those retries ran out, and a wait beyond
// the timeout as a failed request.
//
// # Memory
//
// At most Config.MaxUsers users have lines gathered or a digest under
// way; lines for others are dropped, counted (Stats) and logged. At most
// Config.MaxLines lines are listed per user and digest; the digest ends
// with "… and K more" for the others, of which only the key and channel
// are kept. Lines are cut at
// Config.MaxLineRunes characters. The scheduler holds one request per
// digest under way, and forgets a channel once its messages no longer
// constrain later ones.
//
// # Time
//
// The Sender reads time only from its schedule.Clock and keeps no timer
// of its own: gathering delays, backoffs and retry_after waits are alarms
// filed with its schedule.Runner (Runner.At), called on the one timer
// that paces its requests; Close stops those still filed. Tests drive it
// with scheduletest.Clock.
package digest
