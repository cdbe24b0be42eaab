// Package digest sends users the results of work that ran long after
// their command, such as queued pins, whose interaction token (15
// minutes) is long dead: as digests by direct message, or in a fallback
// channel when their DMs are closed, without ever meeting a 429.
//
// # Usage
//
// One Sender serves the process. It takes the bot's REST client, a clock
// and a logger:
//
//	s, err := digest.New(client.Rest, schedule.SystemClock(), log, digest.Config{})
//	s.Add(userID, channelID, "✅ cat.png pinned to Cats (@alice)")
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
// accepts no DM (403, code 50007), the digest goes to the fallback
// channel given to Add, each message opening with the user's mention,
// and for Config.DMsClosedFor (1 hour) the user's digests go there at
// once. A fallback channel that refuses (403 Missing Access or
// Permissions, 404 Unknown Channel), or none, drops the digest with a log
// line: the results remain visible in /queue. Digests never ping anyone:
// their allowed_mentions allow nothing.
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
// fall together with others'.
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
// Config.MaxLines lines are kept per user and digest; the digest ends
// with "… and K more" for the others. Lines are cut at
// Config.MaxLineRunes characters. The scheduler holds one request per
// digest under way, and forgets a channel once its messages no longer
// constrain later ones.
//
// # Time
//
// The Sender reads time only from its schedule.Clock: gathering delays,
// backoffs and retry_after waits are instants on it, kept in one heap and
// waited for on one timer; the runner has the other. Tests drive both
// with scheduletest.Clock.
package digest
