// Package limit is the room for pinbot's limits on time: the contract a
// per-key limit meets (Policy, Decision), the policies themselves in its
// subpackages, and, below, the map of every limit in pinbot and where it
// lives.
//
// # Every limit in pinbot
//
// Pins per Pinterest account, the engine's core (package actors, not
// here: each account's actor owns its window and journals every change
// through package persistence):
//
//   - actors/window.go: the sliding-window log, at most PINBOT_PIN_LIMIT
//     pins in any rolling PINBOT_PIN_WINDOW (default 100 per 12 hours,
//     actors.DefaultLimit and DefaultWindow).
//   - actors/ledger.go: the window plus the reservations granted and not
//     yet resolved, each counted as a used slot until its outcome is known.
//   - actors/rules.go: the limits in force across a change of the limit
//     or window between runs.
//   - actors/jobs.go, jobtimer.go: each account's durable queue of pins
//     waiting for a slot, and the process's one timer for them.
//
// Per key, behind Policy (this package's subpackages):
//
//   - gcra: the generic cell rate algorithm, a Policy. It limits each
//     Discord user's commands (bot/throttle.go, PINBOT_USER_RATE, default
//     60 per 10 minutes) and each HTTP client's requests (internal/edge,
//     PINBOT_HTTP_RATE and PINBOT_OPERATOR_RATE, defaults 20 and 120 a
//     minute), which sets the RateLimit-* and Retry-After headers.
//
// Per group, scheduled rather than refused:
//
//   - schedule: the per-group scheduler, one heap of groups and one timer,
//     each group under a Rule, a sliding log or a fixed-window reservoir,
//     with exact start times. It paces the digests of queued pins
//     (bot/digest): 5 messages per 5 seconds per Discord channel
//     (schedule.DiscordChannel) and 20 requests a second in all
//     (digest.DefaultPace). Its policies answer when the k-th waiting job
//     may start, not whether a request may go now, so they are not
//     Policies; a Rule stays a comparable value (a group's identity), so
//     its Kind stays a closed enum.
//
// Limits set by the services pinbot calls, obeyed rather than enforced:
//
//   - bot/pinterest/quota.go: pauses from Pinterest's rate-limit headers,
//     per kind of request and per user and app: a 429, or an answer with
//     x-ratelimit-remaining 0, holds that kind of request until the
//     announced reset.
//   - bot/pinterest/breaker.go: the circuit breaker in front of Pinterest,
//     open after consecutive failures, half-open after its OpenFor.
//   - bot/internal/discordio/ratelimit.go: Discord's REST buckets, one
//     request at a time per bucket, holds on a bucket's, the global and
//     Cloudflare's 429s.
//
// # Adding a policy
//
// A new per-key policy is one file here (or a subpackage, as gcra) with
// its tests, and a row in the table of TestPolicies, which checks it against the contract of
// Policy: exact Remaining, RetryAfter and ResetAfter, a refusal spends
// nothing, keys are independent, no span lets a key spend more than its
// rate. Time is an argument, never a reading of the wall clock.
package limit
