// Package schedule runs jobs per group under a rate-limit policy, each job
// at the exact instant its group's limit allows, jobs of one group in the
// order they were submitted.
//
// A group is anything with a limit of its own: a Pinterest account (100
// pins in any rolling 12 hours, a sliding log), a Discord channel (5
// messages in any 5 seconds, a sliding log: see DiscordChannel). Every group
// of the process shares one min-heap of groups keyed by the instant their
// next job is due, and one timer sleeps until the earliest: there is no
// goroutine or timer per job or per group, and a group with nothing
// waiting leaves memory once its recorded calls stop constraining later
// ones.
//
// One timer for jobs and timed entries: a Runner also calls alarms,
// functions filed with Runner.At for an instant (a delay over, a failed
// request to try again), from a second heap on the same timer and the
// same goroutine, so that code that paces its work with a Runner needs no
// timer of its own, and one fake clock drives both in tests.
//
// Nothing here reads the clock on its own: Scheduler, the core, takes the
// time as an argument, and Runner asks a Clock. The package keeps its
// state in memory only, and imports nothing from actors.
//
// # Usage
//
// A Runner hands jobs to a handler as they come due, and calls alarms at
// their instants:
//
//	r := schedule.NewRunner(schedule.SystemClock(), func(j schedule.Job[Message]) {
//		go send(j.Value) // start the work, return at once
//	})
//	go r.Run(ctx)
//	at, err := r.Submit("channel:"+channelID, schedule.DiscordChannel(), id, msg)
//	a := r.At(retryAt, func(now time.Time) { … }) // a.Stop() calls it off
//
// at is the instant the message will be sent. The handler and the alarms
// run without the Runner's lock held, so they may Submit and file alarms.
// Tests drive time themselves, with scheduletest.Clock or with the
// Scheduler alone:
//
//	s := schedule.New[Message]()
//	at, err := s.Submit(now, group, rule, id, msg)
//	next, ok := s.Next()        // when to look again
//	jobs := s.Due(next, nil)    // the jobs due then, recorded as calls
//
// # Ready times
//
// Submit returns the instant the job will start, computed from the calls
// its group has made and the jobs waiting ahead of it: exact when Due is
// called at each instant Next reports (as Runner does, up to its timer's
// lateness), and earlier only when a job ahead of it is canceled.
//
// For a sliding log of limit calls per width, with e_0 ≤ … ≤ e_{limit-1}
// the newest limit calls (missing ones taken as -∞), the k-th waiting job
// (k from 0) starts at
//
//	max(now, e_{k mod limit} + width) + ⌊k/limit⌋·width
//
// For a fixed window of reservoir calls per window, windows starting at
// multiples of window from the Unix epoch (windowStart(t) = ⌊t/window⌋·window)
// and free = reservoir − (calls made in the window of now), it starts at
//
//	now                                                     if k < free
//	windowStart(now) + (1 + ⌊(k − free)/reservoir⌋)·window  otherwise
//
// This corrects the estimate of the delayed-queue design it comes from,
// nextWindowStart + ⌊k/reservoir⌋·window, which treats the current window
// as full: with free calls left there, the first free jobs are put a
// window late, and so is every job that would use a slot they leave. For
// example, 5 calls per 5 s, windows [0 s, 5 s), [5 s, 10 s), …; at 2 s two
// calls were made (free = 3) and 10 jobs arrive:
//
//	k         0    1    2    3    4    5    6    7    8    9
//	here      2 s  2 s  2 s  5 s  5 s  5 s  5 s  5 s  10 s 10 s
//	estimate  5 s  5 s  5 s  5 s  5 s  10 s 10 s 10 s 10 s 10 s
//
// The estimate is late for 6 of the 10 jobs (by 3 s for k = 0-2 and 5 s
// for k = 5-7; 2.4 s on average), leaving the 3 calls free in [0 s, 5 s)
// unused. For 1,000 such jobs it is late for 600, by 2.994 s on average and
// 5 s at most (TestBurstFixedWindow). In the original flow the jobs that
// fit the current window get through its call counter at once, out of
// turn, and only the others are counted as waiting; here every job waits
// its turn, and the formula gives the first free of them the current
// window.
package schedule
