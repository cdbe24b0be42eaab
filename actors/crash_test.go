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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/rs/zerolog"
)

// The crash test re-executes this test binary as a child that grants under
// load over a durable Badger store and reports every acknowledged grant on
// stdout; the parent kills it with SIGKILL at a random moment, then checks
// from the store that every grant it saw acknowledged is there and that no
// account is over its limit.
//
// The engine runs on the real clock, so no slot frees during the test: a
// child working on the same accounts every cycle would fill them all after
// about ten cycles and test nothing but denials from then on. Each cycle's
// child therefore works on accounts of its own, fresh, besides accounts
// carried across restarts: the previous cycle's, partly used, and shared
// ones that every child works on, full after some cycles.

const (
	crashChildEnv = "PINBOT_CRASH_CHILD_DIR"
	crashCycleEnv = "PINBOT_CRASH_CYCLE"
	// crashWallEnv is how far (ms) the child's wall clock is off: the
	// parent steps it between restarts, which must not move engine time.
	crashWallEnv   = "PINBOT_CRASH_WALL_STEP_MS"
	crashShared    = 8  // accounts every cycle's child works on
	crashPerCycle  = 16 // accounts of each cycle, also worked on in the next
	crashWorkers   = 16
	crashCycles    = 20
	crashLineLimit = 800
)

// crashAccounts names the accounts the child of cycle works on: the shared
// ones, the previous cycle's and its own.
func crashAccounts(cycle int) []string {
	var out []string
	for i := 0; i < crashShared; i++ {
		out = append(out, fmt.Sprintf("crash-s%02d", i))
	}
	for c := max(cycle-1, 0); c <= cycle; c++ {
		for i := 0; i < crashPerCycle; i++ {
			out = append(out, fmt.Sprintf("crash-c%02d-%02d", c, i))
		}
	}
	return out
}

// crashAccountsUpTo names every account the children of cycles 0 to cycle
// worked on.
func crashAccountsUpTo(cycle int) []string {
	seen := map[string]bool{}
	var out []string
	for c := 0; c <= cycle; c++ {
		for _, acc := range crashAccounts(c) {
			if !seen[acc] {
				seen[acc] = true
				out = append(out, acc)
			}
		}
	}
	return out
}

// crashMinGrants is the fewest grants a child killed after killAfter
// counted lines must have acknowledged. The counted lines are G (a grant),
// R (a release, at most three per grant: a grant has at most three
// reservations) and Z (one per 50 denials of a worker), so a child whose
// requests are mostly granted acknowledges about killAfter/4 grants or
// more; one that acknowledges fewer than killAfter/5 was mostly denied,
// and one with none tested nothing.
func crashMinGrants(killAfter int) int { return max(1, killAfter/5) }

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("only runs as the crash test's child process")
	}
	cycle, err := strconv.Atoi(os.Getenv(crashCycleEnv))
	if err != nil || cycle < 0 {
		fmt.Fprintf(os.Stderr, "%s: %q is not a cycle number\n", crashCycleEnv, os.Getenv(crashCycleEnv))
		os.Exit(3)
	}
	accounts := crashAccounts(cycle)
	store, err := badgerstore.Open(dir, badgerstore.Options{Durable: true, MemTableSize: 8 << 20}, zerolog.Nop())
	if err != nil {
		fmt.Fprintf(os.Stderr, "open: %v\n", err)
		os.Exit(3)
	}
	step, _ := strconv.ParseInt(os.Getenv(crashWallEnv), 10, 64)
	cfg := DefaultConfig()
	cfg.SnapshotEvery = 16 // snapshots and journal truncation happen often
	cfg.Recover = true
	cfg.Wall = func() int64 { return time.Now().UnixMilli() + step }
	eng, err := New(cfg, store, zerolog.Nop())
	if err != nil {
		fmt.Fprintf(os.Stderr, "engine: %v\n", err)
		os.Exit(3)
	}
	var mu sync.Mutex
	out := os.Stdout
	fmt.Fprintln(out, "READY", eng.Now().UnixMilli())
	var wg sync.WaitGroup
	for w := 0; w < crashWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(w)))
			ctx := context.Background()
			denied := 0
			for {
				acc := accounts[r.IntN(len(accounts))]
				n := 1 + r.IntN(3)
				// Announce the request first: a grant may become durable
				// and the child die before it reports it.
				mu.Lock()
				fmt.Fprintf(out, "A %s %d\n", acc, n)
				mu.Unlock()
				g, err := eng.Reserve(ctx, acc, n)
				if err != nil {
					fmt.Fprintf(os.Stderr, "reserve: %v\n", err)
					os.Exit(4)
				}
				if g.Granted == 0 {
					// The shared accounts fill up over the cycles: keep
					// reporting progress so the parent's kill moment
					// still comes.
					mu.Lock()
					fmt.Fprintf(out, "D %s %d\n", acc, n)
					if denied++; denied%50 == 0 {
						fmt.Fprintln(out, "Z")
					}
					mu.Unlock()
					continue
				}
				mu.Lock()
				fmt.Fprintf(out, "G %s %d %d %d\n", acc, g.First, g.Granted, n)
				mu.Unlock()
				// Resolve some: commits keep the slot, releases happen only
				// after the parent learned of them (it subtracts them).
				for _, res := range g.Reservations() {
					switch r.IntN(3) {
					case 0:
						_, _ = eng.Commit(ctx, res, eng.Now())
					case 1:
						mu.Lock()
						fmt.Fprintf(out, "R %s %d\n", acc, res.ID)
						mu.Unlock()
						_, _ = eng.Release(ctx, res)
					}
				}
			}
		}()
	}
	wg.Wait()
}

type crashLedger struct {
	acked    map[string]int // slots acknowledged, per account
	released map[string]int // releases announced (they may or may not have landed)
	// unanswered counts slots asked for by requests a killed child never
	// answered: they may have been granted durably all the same.
	unanswered map[string]int
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	// Without a boot ID, engine time follows the wall clock at each start.
	steps := SystemUptime().BootID() != ""
	if !steps {
		t.Log("no boot ID on this machine: the wall clock is not stepped")
	}
	total := crashLedger{acked: map[string]int{}, released: map[string]int{}, unanswered: map[string]int{}}
	for cycle := 0; cycle < crashCycles; cycle++ {
		// Kill after a random number of acknowledged grants; sometimes at
		// once, while the child is still starting and replaying.
		killAfter := r.IntN(crashLineLimit)
		if cycle%6 == 0 {
			killAfter = 0
		}
		// The wall clock steps by up to 3 hours either way between
		// restarts; the first run sets engine time from the true time.
		var step time.Duration
		if cycle > 0 && steps {
			step = time.Duration(r.Int64N(int64(6*time.Hour))) - 3*time.Hour
		}
		run := runCrashChild(t, exe, dir, cycle, killAfter, step, &total)
		t.Logf("cycle %2d: wall clock %+v off, engine clock %+dms; killed after %3d lines: %3d grants (%4d slots) acknowledged, %3d requests denied",
			cycle, step.Round(time.Second), run.skew, killAfter, run.grants, run.slots, run.denied)
		if steps && (run.skew > 2000 || run.skew < -2000) {
			t.Errorf("cycle %d: with the wall clock %v off, the engine clock started %d ms off the true time: a wall-clock step entered engine time",
				cycle, step, run.skew)
		}
		checkCrashState(t, dir, cycle, &total)
		// A cycle killed at once may grant nothing; any other must grant,
		// or it tested nothing but denials.
		if want := crashMinGrants(killAfter); killAfter > 0 && run.grants < want {
			t.Errorf("cycle %d: killed after %d lines, the child acknowledged %d grants (%d requests denied), want at least %d: the cycle tested little but denials",
				cycle, killAfter, run.grants, run.denied, want)
		}
	}
	var grants int
	for _, n := range total.acked {
		grants += n
	}
	t.Logf("%d kill cycles, %d slots acknowledged", crashCycles, grants)
	if grants == 0 {
		t.Fatal("the children acknowledged nothing: the test tested nothing")
	}
}

// crashRun is what the parent saw of one child.
type crashRun struct {
	skew   int64 // engine time at start minus the true time, ms
	grants int   // grants acknowledged
	slots  int   // slots they granted
	denied int   // requests answered with nothing granted
}

func runCrashChild(t *testing.T, exe, dir string, cycle, killAfter int, step time.Duration, total *crashLedger) crashRun {
	t.Helper()
	var run crashRun
	cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashCycleEnv+"="+strconv.Itoa(cycle),
		crashWallEnv+"="+strconv.FormatInt(step.Milliseconds(), 10))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	asked := map[string]int{} // slots asked for and not answered yet
	defer func() {
		for acc, n := range asked {
			total.unanswered[acc] += n
		}
	}()
	lines := 0
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "READY":
			if engineNow, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				run.skew = engineNow - time.Now().UnixMilli()
			}
			if killAfter == 0 {
				kill()
			}
		case len(f) == 3 && f[0] == "A":
			n, _ := strconv.Atoi(f[2])
			asked[f[1]] += n
			continue
		case len(f) == 3 && f[0] == "D":
			n, _ := strconv.Atoi(f[2])
			asked[f[1]] -= n
			run.denied++
			continue
		case len(f) == 5 && f[0] == "G":
			n, _ := strconv.Atoi(f[3])
			total.acked[f[1]] += n
			run.grants++
			run.slots += n
			a, _ := strconv.Atoi(f[4])
			asked[f[1]] -= a
		case len(f) == 3 && f[0] == "R":
			total.released[f[1]]++
		case len(f) == 1 && f[0] == "Z":
		default:
			continue
		}
		lines++
		if lines >= killAfter && killAfter > 0 {
			kill()
		}
	}
	kill()
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\nstderr:\n%s", err, stderr.String())
	}
	return run
}

// checkCrashState opens the store left by the killed child and checks each
// account the children of cycles 0 to cycle worked on: every acknowledged
// slot not announced as released is counted, and no account is over its
// limit.
func checkCrashState(t *testing.T, dir string, cycle int, total *crashLedger) {
	t.Helper()
	store, err := badgerstore.Open(dir, badgerstore.Options{Durable: true, MemTableSize: 8 << 20}, zerolog.Nop())
	if err != nil {
		t.Fatalf("cycle %d: reopen after SIGKILL: %v", cycle, err)
	}
	defer store.Close()
	cfg := DefaultConfig()
	cfg.Recover = false
	eng, err := New(cfg, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	ctx := context.Background()
	for _, acc := range crashAccountsUpTo(cycle) {
		st, err := eng.Status(ctx, acc)
		if err != nil {
			t.Fatalf("cycle %d: %s: %v", cycle, acc, err)
		}
		if st.Used > st.Limit {
			t.Fatalf("cycle %d: %s uses %d slots, over the limit %d", cycle, acc, st.Used, st.Limit)
		}
		// Every run of the test lasts seconds of true time: the slots
		// granted and never released, the pins made in truth, all fall in
		// one window, whatever the wall clock said.
		if real := total.acked[acc] - total.released[acc]; real > st.Limit {
			t.Fatalf("cycle %d: %s: %d slots acknowledged and not released in one true window, over the limit %d",
				cycle, acc, real, st.Limit)
		}
		if floor := total.acked[acc] - total.released[acc]; st.Used < floor {
			t.Fatalf("cycle %d: %s: %d slots stored, but %d acknowledged and %d released: a grant was lost",
				cycle, acc, st.Used, total.acked[acc], total.released[acc])
		}
		if ceiling := total.acked[acc] + total.unanswered[acc]; st.Used > ceiling {
			t.Fatalf("cycle %d: %s: %d slots stored, more than the %d acknowledged plus %d asked for by unanswered requests",
				cycle, acc, st.Used, total.acked[acc], total.unanswered[acc])
		}
	}
}
