package main

import (
	"fmt"
	"io"
	"strings"
)

// usages holds the help of each public command; "" is pinbench's own.
var usages = map[string]string{
	"": `pinbench measures pinbot's rate-limit engine, compares it with the limiters
one would otherwise pick, and checks its safety invariant across crashes.

Usage:
  pinbench run [flags]       load generator: throughput, latency, memory, restart
  pinbench compare [flags]   pinbot against Redis, x/time/rate and bare actors
  pinbench soak [flags]      SIGKILL an engine process under load, check what it kept
  pinbench help [command]

Run 'pinbench help COMMAND' for a command's flags.
`,
	"run": `Usage: pinbench run [flags]

Drives the engine in-process and prints throughput, latency p50/p99/p99.9,
heap per resident account and, with --restart, the time to the first served
request. Progress goes to stderr once a second.

Workload:
  -n, --accounts N       accounts, 1000 to 1000000 (default 100000)
  -c, --callers LIST     concurrent callers, 1 to 1024; several, comma-separated,
                         run one after the other (default 256)
  --dist NAME            uniform or zipf (default uniform)
  --zipf-s S, --zipf-v V Zipf exponent (> 1, default 1.1) and offset (>= 1, default 1)
  --duration D           length of each run (default 10s)
  --ops N                run exactly N decisions instead of a duration
  --rate R               paced (open-loop) load: R decisions/s, or "half" to
                         measure the maximum first and then run at half of it
  --seed N               picks the accounts (default 1)
Engine:
  --durable              fsync before a grant is acknowledged (default true;
                         --durable=false is the relaxed mode)
  --reserve-only         a decision is Reserve(1) alone, not Reserve(1)+CommitAsync
  --warm                 make every account resident before timing (default true)
  --limit N, --window D  pins per window (default 100 per 12h)
  --restart              measure start-up over an existing store: --data-dir,
                         filled with --accounts accounts first when empty
  --data-dir DIR         the store for --restart; otherwise where each run's
                         fresh store is made (default: the temporary directory)
Output:
  --json                 print JSON instead of tables
  --plot DIR             write PNG and SVG charts into DIR
  --quiet                no progress lines
  --log-level LEVEL      trace, debug, info, warn or error (default warn)
`,
	"compare": `Usage: pinbench compare [flags]

Runs one workload, on this machine, against: pinbot durable and relaxed; a
Redis sorted-set sliding-window log (one Lua script per decision) on a
redis-server started here with appendfsync always, then everysec; one
golang.org/x/time/rate limiter per account (the in-process ceiling); and the
bare protoactor RequestFuture round trip (the actor-messaging ceiling). Prints
decisions/s, latency, and the ratios pinbot ÷ each. With --rate, offers every
system the same paced (open-loop) load instead and prints, per system, the
rate achieved, latency from each decision's scheduled instant (p50 to max)
and how many decisions were late to start (no caller free at their instant).

  -n, --accounts N       accounts, 1000 to 1000000 (default 100000)
  -c, --callers N        concurrent callers, and Redis connections, 1 to 1024
                         (default 256)
  --dist, --zipf-s, --zipf-v, --seed, --limit, --window, --reserve-only
                         as for run
  --duration D           length of each system's run (default 10s; 60s with
                         --rate, so that collections and the engine's minute
                         checkpoint fall inside)
  --ops N                exactly N decisions per system instead of a duration
  --rate R               paced load, the same for every system: R decisions/s,
                         or FxSYSTEM, a fraction F of SYSTEM's closed-loop
                         maximum measured first in the same run (10s unless
                         --duration or --ops is given): 0.5xredis-always.
                         SYSTEM is one of the --only names and is measured even
                         when --only leaves it out. Targets: pinbot durable's
                         p99 and p99.9 below Redis always's, when both ran
  --only LIST            comma-separated subset of: pinbot-durable, pinbot-relaxed,
                         redis-always, redis-everysec, xrate, actor
  --skip-redis           leave out Redis (it needs redis-server: make bench-deps)
  --redis-server PATH    the redis-server binary (default: redis-server on PATH)
  --redis-pipeline MODE  auto: go-redis auto-pipelining coalesces the callers'
                         scripts; off: one round trip per decision (default auto)
  --json, --plot DIR, --quiet, --log-level
                         as for run
`,
	"soak": `Usage: pinbench soak [flags]

Starts an engine process on a fresh data directory under load, kills it with
SIGKILL at random moments and restarts it over what the kill left, --cycles
times. After each kill, on a copy of the data directory, it checks that the
store opens cleanly, replays every account's journal to check that no window
ever held more than the limit, and compares the engine's count with every
acknowledged grant; at the end it checks the whole history of acknowledged
grants. Exits 3 on any violation, 1 when the soak itself fails.

  --cycles N            kill cycles (default 100)
  -c, --callers N       concurrent callers in the engine process (default 16)
  -n, --accounts N      accounts (default 200)
  --limit N             pins per window (default 100)
  --window D            window length (default 3s), short so windows roll
  --lease D             reservation lease (default 1s)
  --idle D              idle time before an account actor is passivated (default 1s)
  --kill-min D, --kill-max D
                        each kill comes at a random moment in [min, max] after
                        the process starts (default 0 to 1.5s); one cycle in six
                        draws from the first tenth, to kill during start-up
  --seed N              seeds the kill moments and the load (default: the clock)
  --data-dir DIR        the data directory, which must be empty (default: a
                        temporary one, removed unless a violation was found)
  --disk-full           instead, fill the disk under the engine: a small tmpfs
                        when running as root, else an injected store fault;
                        checks that Reserve fails with ErrUnavailable and grants
                        nothing, Status keeps answering, and grants resume once
                        space is back (the engine's expected journal errors are
                        logged from --log-level info down)
  --disk-full-mode MODE auto, tmpfs or fault (default auto)
  --json, --log-level
`,
}

// printUsage prints the help of cmd ("" for pinbench's own).
func printUsage(w io.Writer, cmd string) {
	fmt.Fprint(w, strings.TrimLeft(usages[cmd], "\n"))
}
