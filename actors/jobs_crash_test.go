package actors

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/rs/zerolog"
)

// The queue's crash test re-executes this test binary as a child that
// queues jobs on a few accounts with a short rule (5 per second) and runs
// them as they come due over a durable Badger store, and kills it with
// SIGKILL at random moments. A job's "send" (what a pin's POST is) is
// appended, synced, to a log beside the store, as Pinterest would record
// it. After the last cycle a child runs until every queue is empty; then
// the parent checks that no acknowledged job was lost, none was sent
// twice, and no account's sends exceed the rule in any window.

const (
	jobsCrashEnv    = "PINBOT_JOBS_CRASH_DIR"
	jobsDrainEnv    = "PINBOT_JOBS_CRASH_DRAIN"
	jobsCrashCycles = 20
	jobsCrashLimit  = 5
	jobsCrashWindow = time.Second
)

var jobsCrashAccounts = []string{"qa", "qb", "qc", "qd"}

func jobsCrashConfig() Config {
	cfg := DefaultConfig()
	cfg.Limit = jobsCrashLimit
	cfg.Window = jobsCrashWindow
	cfg.Lease = 500 * time.Millisecond
	cfg.SnapshotEvery = 8
	cfg.KeepDone = 1 << 20 // every done job stays, for the check
	cfg.Recover = true
	return cfg
}

func openJobsCrashStore(dir string) (*badgerstore.Store, error) {
	return badgerstore.Open(dir, badgerstore.Options{Durable: true, MemTableSize: 8 << 20}, zerolog.Nop())
}

func TestJobsCrashChild(t *testing.T) {
	dir := os.Getenv(jobsCrashEnv)
	if dir == "" {
		t.Skip("only runs as the queue crash test's child process")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		os.Exit(3)
	}
	store, err := openJobsCrashStore(filepath.Join(dir, "store"))
	if err != nil {
		fail("open: %v", err)
	}
	sent, err := os.OpenFile(filepath.Join(dir, "sent.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY|os.O_SYNC, 0o644)
	if err != nil {
		fail("sent log: %v", err)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
		mu.Unlock()
	}
	ctx := context.Background()
	var eng *Engine
	ready := make(chan struct{})
	cfg := jobsCrashConfig()
	cfg.OnJob = func(j Job) {
		<-ready
		o := Outcome{Unknown: true}
		if !j.Recovered {
			// The request takes a while; it is sent (logged, synced)
			// before Pinterest's answer comes back.
			time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
			if _, err := fmt.Fprintf(sent, "S %s %d %d\n", j.Account, j.ID, eng.Now().UnixMilli()); err != nil {
				fail("sent log: %v", err)
			}
			o = Outcome{Done: true, At: eng.Now()}
		}
		if _, err := eng.Finish(ctx, j, o); err != nil && !errors.Is(err, ErrClosed) {
			fail("finish: %v", err)
		}
		say("F %s %d", j.Account, j.ID)
	}
	if eng, err = New(cfg, store, zerolog.Nop()); err != nil {
		fail("engine: %v", err)
	}
	close(ready)
	say("READY")
	if os.Getenv(jobsDrainEnv) != "" {
		for {
			busy := false
			for _, acc := range jobsCrashAccounts {
				js, _, err := eng.Jobs(ctx, acc)
				if err != nil {
					fail("jobs: %v", err)
				}
				busy = busy || slices.ContainsFunc(js, func(j Job) bool { return j.State != JobDone })
			}
			if !busy {
				if err := eng.Close(ctx); err != nil {
					fail("close: %v", err)
				}
				say("DONE")
				os.Exit(0)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	for w := range len(jobsCrashAccounts) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(w)))
			for {
				acc := jobsCrashAccounts[r.IntN(len(jobsCrashAccounts))]
				st, err := eng.Status(ctx, acc)
				if err != nil {
					fail("status: %v", err)
				}
				if st.Queued >= 4 {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				payloads := make([][]byte, 1+r.IntN(3))
				for i := range payloads {
					payloads[i] = []byte("pin")
				}
				q, err := eng.Enqueue(ctx, acc, payloads)
				if err != nil {
					fail("enqueue: %v", err)
				}
				for _, j := range q.Jobs {
					say("Q %s %d", acc, j.ID)
				}
			}
		}()
	}
	wg.Wait()
}

func TestJobsCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	queued := map[string]bool{} // "account id" of every acknowledged job
	finished := 0
	for cycle := range jobsCrashCycles {
		killAfter := 1 + r.IntN(80)
		q, f := runJobsCrashChild(t, exe, dir, killAfter, false)
		for _, k := range q {
			queued[k] = true
		}
		finished += f
		t.Logf("cycle %2d: killed after %2d lines: %2d jobs queued, %2d finished", cycle, killAfter, len(q), f)
	}
	_, f := runJobsCrashChild(t, exe, dir, 0, true)
	finished += f
	if len(queued) == 0 || finished == 0 {
		t.Fatalf("%d jobs queued, %d finished: the test tested nothing", len(queued), finished)
	}

	// Sends: at most once each, and within the rule.
	raw, err := os.ReadFile(filepath.Join(dir, "sent.log"))
	if err != nil {
		t.Fatal(err)
	}
	sends := map[string]int{}
	times := map[string][]time.Time{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue // a line cut by the kill
		}
		ms, _ := strconv.ParseInt(f[3], 10, 64)
		sends[f[1]+" "+f[2]]++
		times[f[1]] = append(times[f[1]], time.UnixMilli(ms))
	}
	for k, n := range sends {
		if n > 1 {
			t.Errorf("job %s sent %d times", k, n)
		}
	}
	for acc, ts := range times {
		if n := maxSendsInWindow(ts, jobsCrashWindow); n > jobsCrashLimit {
			t.Errorf("account %s: %d sends within %v, limit %d", acc, n, jobsCrashWindow, jobsCrashLimit)
		}
	}

	// Jobs: every acknowledged one is done, none waiting or running.
	store, err := openJobsCrashStore(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	done, unknown := 0, 0
	for _, acc := range jobsCrashAccounts {
		js, err := store.Jobs(t.Context(), acc)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range js {
			k := acc + " " + strconv.FormatUint(j.ID, 10)
			if j.State != JobDone {
				t.Errorf("job %s is %v after the drain", k, j.State)
			}
			if queued[k] {
				done++
				delete(queued, k)
			}
			if sends[k] == 0 {
				unknown++
			}
		}
	}
	for k := range queued {
		t.Errorf("acknowledged job %s lost", k)
	}
	t.Logf("%d acknowledged jobs done, %d sends, %d not sent (running at a kill: outcome unknown, counted)", done, len(sends), unknown)
}

// maxSendsInWindow returns the most of ts in any window (t-width, t].
func maxSendsInWindow(ts []time.Time, width time.Duration) int {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, lo := 0, 0
	for hi := range ts {
		for !ts[lo].After(ts[hi].Add(-width)) {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// runJobsCrashChild runs one child: killed with SIGKILL after killAfter
// lines, or, with drain, until it has run every job. It returns the jobs
// the child acknowledged ("account id") and how many it finished.
func runJobsCrashChild(t *testing.T, exe, dir string, killAfter int, drain bool) ([]string, int) {
	t.Helper()
	cmd := exec.Command(exe, "-test.run=^TestJobsCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), jobsCrashEnv+"="+dir)
	if drain {
		cmd.Env = append(cmd.Env, jobsDrainEnv+"=1")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var queued []string
	finished, lines := 0, 0
	killed, drained := false, false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "Q":
			queued = append(queued, f[1]+" "+f[2])
		case len(f) == 3 && f[0] == "F":
			finished++
		case len(f) == 1 && f[0] == "DONE":
			drained = true
		default:
			continue
		}
		if lines++; !drain && lines >= killAfter && !killed {
			killed = true
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if drain {
		if err != nil || !drained {
			t.Fatalf("draining child: %v\nstderr:\n%s", err, stderr.String())
		}
		return queued, finished
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\nstderr:\n%s", err, stderr.String())
	}
	return queued, finished
}
