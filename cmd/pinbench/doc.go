// Command pinbench measures pinbot's rate-limit engine and checks its
// safety invariant under crashes.
//
//	pinbench run      load generator: N accounts, C callers, uniform or Zipf
//	                  keys, durable or relaxed, closed or paced load; prints
//	                  throughput, latency p50/p99/p99.9, heap per resident
//	                  account, and with --restart the time to the first
//	                  served request; --json, --plot DIR
//	pinbench compare  the same workload, in the same run, against pinbot
//	                  durable and relaxed, a Redis sorted-set sliding-window
//	                  log (Lua, appendfsync always and everysec) on a
//	                  redis-server it starts itself, golang.org/x/time/rate,
//	                  and the bare protoactor RequestFuture round trip;
//	                  prints the ratios pinbot ÷ each; with --rate R (or
//	                  --rate 0.5xredis-always, half of that system's
//	                  closed-loop maximum measured first) offers each
//	                  system the same paced load, 60 s by default, and
//	                  prints the rate achieved, latency p50 to max and the
//	                  decisions late to start
//	pinbench soak     SIGKILLs an engine process under load at random
//	                  moments and checks that no acknowledged grant is lost,
//	                  no window ever held more than the limit, and the data
//	                  directory opens; --disk-full fills the disk instead
//
// `pinbench help COMMAND` lists a command's flags. Every system in compare
// is driven by the same generator (package internal/workload): decision i
// concerns the same account whatever the system, so a run of a fixed
// number of decisions asks each system the same questions.
//
// Latencies are recorded in a log-linear histogram (internal/hist) with
// 0.8% precision. Paced runs count latency from each decision's scheduled
// start, so a system that falls behind is charged its queueing delay, and
// count as late the decisions no caller was free to start at their instant.
package main
