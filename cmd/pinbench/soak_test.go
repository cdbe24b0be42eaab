package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/app/enginestore"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
	"github.com/rs/zerolog"
)

// TestSoakOneCycle runs one SIGKILL cycle of a re-executed engine process
// (this test binary, see TestMain) and all the checks.
func TestSoakOneCycle(t *testing.T) {
	t.Parallel()
	// The kill comes 3 s after the child starts: a child built with -race
	// on a busy machine can take over a second to be ready, and this test
	// needs the kill to land under load, not during the start.
	r := pinbench(t, "soak", "--cycles", "1", "-n", "20", "-c", "4", "--limit", "10", "--window", "500ms",
		"--lease", "200ms", "--idle", "100ms", "--kill-min", "3s", "--kill-max", "3200ms", "--seed", "7", "--json")
	r.want(t, exitOK)
	var rep soakReport
	r.decode(t, &rep)
	if rep.Kills != 1 || rep.AckedSlots == 0 || rep.StoreChecks != 2 || len(rep.Violations) != 0 {
		t.Fatalf("kills %d, acked %d, store checks %d, violations %v", rep.Kills, rep.AckedSlots, rep.StoreChecks, rep.Violations)
	}
	if rep.HistoryGrants == 0 || rep.HistoryFull == 0 {
		t.Errorf("%d acknowledged grants checked, %d filled the limit: the soak must hit the limit", rep.HistoryGrants, rep.HistoryFull)
	}
	if rep.Kept {
		t.Errorf("the temporary data directory %s was kept after a clean soak", rep.DataDir)
	}
	// The kill came under load: it left journal events the check replayed.
	if rep.AccountsToReplay == 0 || rep.KillsToReplay != 1 {
		t.Errorf("%d accounts left to replay by %d kill(s); want some, by the one kill", rep.AccountsToReplay, rep.KillsToReplay)
	}
	if !strings.Contains(r.stderr, "soak: cycle 1/1: killed") || !strings.Contains(r.stderr, "left to replay") {
		t.Errorf("no progress line on stderr:\n%s", r.stderr)
	}
}

// TestSoakExitStatuses: a soak that ran and found a violation exits
// exitViolation; one that could not run exits exitFailure.
func TestSoakExitStatuses(t *testing.T) {
	t.Parallel()
	if exitViolation == exitFailure {
		t.Fatalf("exitViolation and exitFailure are both %d", exitFailure)
	}
	// Killed within a millisecond of its start, the engine process
	// acknowledges nothing: the soak tested nothing, which it reports as
	// a violation. A soak with violations keeps its data directory: here
	// one the test removes.
	dataDir := filepath.Join(t.TempDir(), "soak")
	r := pinbench(t, "soak", "--cycles", "1", "-n", "1", "-c", "1", "--kill-max", "1ms", "--seed", "1", "--json",
		"--data-dir", dataDir)
	r.want(t, exitViolation)
	var rep soakReport
	r.decode(t, &rep)
	if rep.AckedSlots != 0 || rep.ProcessFailure == 0 {
		t.Fatalf("acked %d, process failures %d, violations %v; want the soak to report it tested nothing",
			rep.AckedSlots, rep.ProcessFailure, rep.Violations)
	}
	if !rep.Kept || rep.DataDir != dataDir {
		t.Errorf("data directory %s kept %v, want %s kept", rep.DataDir, rep.Kept, dataDir)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = pinbench(t, "soak", "--cycles", "1", "--data-dir", notDir)
	r.want(t, exitFailure)
	if !strings.Contains(r.stderr, "--data-dir "+notDir) {
		t.Errorf("stderr does not say which data directory failed:\n%s", r.stderr)
	}
}

func TestSoakDiskFullInjectedFault(t *testing.T) {
	t.Parallel()
	r := pinbench(t, "soak", "--disk-full", "--disk-full-mode", "fault")
	r.want(t, exitOK)
	for _, w := range []string{
		"mode fault",
		"ok   Reserve refuses while the disk is full",
		"journal unavailable, nothing granted",
		"ENOSPC in the error: true",
		"ok   Status answers while the disk is full",
		"ok   grants resume once space is back",
		"result: PASS",
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, r.stdout)
		}
	}
}

// brokenFiller fills the disk in a way the engine cannot see: the
// scenario must then fail.
type brokenFiller struct{}

func (brokenFiller) fill() (string, error) { return "nothing filled", nil }
func (brokenFiller) free() (string, error) { return "nothing freed", nil }

func TestDiskFullScenarioDetectsGrantsOnFullDisk(t *testing.T) {
	t.Parallel()
	store := persistencetest.NewMemStore(nil)
	eng, err := actors.New(engineConfig(100, time.Hour), store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	var steps []dfStep
	if diskFullScenario(context.Background(), eng, brokenFiller{}, func(s dfStep) { steps = append(steps, s) }, nil) {
		t.Fatalf("the scenario passed although grants went on after the disk 'filled': %+v", steps)
	}
	last := steps[len(steps)-1]
	if last.OK || !strings.Contains(last.Detail, "all granted") {
		t.Fatalf("last step %+v, want the failure to refuse", last)
	}
}

// ledgerOf builds an acknowledged ledger from child output lines.
func ledgerOf(window, lease int64, lines ...string) *ackLedger {
	l := newAckLedger(window, lease)
	for _, s := range lines {
		l.line(s)
	}
	return l
}

func TestLedgerMustCount(t *testing.T) {
	// Window 1000 ms, lease 100 ms. Slots 1-4 granted at 10 000.
	l := ledgerOf(1000, 100,
		"READY 9000",
		"G a 1 4 10000",
		"C a 1 10050", // committed: counts until 11 050
		"R a 2 10020", // released: may be free at once
		"C a 4 10300", // committed after its deadline (10 100): counts until 11 100 either way
	)
	// Slot 3 is left to its lease: a pin at 10 100, counting until 11 100.
	steps := []struct {
		t    int64
		want int
	}{
		{10000, 3}, {11049, 3}, {11050, 2}, {11099, 2}, {11100, 0},
	}
	for i, s := range steps {
		if got := l.mustCount("a", s.t); got != s.want {
			t.Errorf("step %d: mustCount(a, %d) = %d want %d", i, s.t, got, s.want)
		}
	}
	if l.slots != 4 || l.commits != 2 || l.releases != 1 || l.unparsed != 0 {
		t.Errorf("slots %d commits %d releases %d unparsed %d", l.slots, l.commits, l.releases, l.unparsed)
	}
	bad := ledgerOf(1000, 100, "G a 1 1 10", "G a 1 1 20", "C b 7 30", "garbage")
	if len(bad.anomalies) != 2 || bad.unparsed != 1 {
		t.Errorf("anomalies %q, unparsed %d; want a twice-granted ID, a commit of an unknown one, one bad line", bad.anomalies, bad.unparsed)
	}
}

func TestHistoryCheck(t *testing.T) {
	// Limit 2, window 1000, lease 100.
	ok := ledgerOf(1000, 100,
		"G a 1 1 1000", "C a 1 1000", // pin at 1000 until 2000
		"G a 2 1 1500", "R a 2 1500", // released at once
		"G a 3 1 1500", // IDs order grants in the same ms: 2 was released before 3 was asked
		"G a 4 1 2000", // pin 1 expired at 2000
	)
	checked, full, v := ok.historyCheck(2)
	if len(v) != 0 || checked != 4 || full != 3 {
		t.Fatalf("checked %d full %d violations %v; want 4, 3, none", checked, full, v)
	}
	over := ledgerOf(1000, 100,
		"G a 1 2 1000", "C a 1 1000",
		"G a 3 1 1999", // slot 1 counts until 2000, slot 2 until 2100: 3 held
	)
	if _, _, v := over.historyCheck(2); len(v) != 1 || v[0].Kind != violOver {
		t.Fatalf("violations %v, want one window over the limit", v)
	}
}

func TestReplay(t *testing.T) {
	ev := func(seq uint64, k persistence.EventKind, id uint64, n uint32, at int64) persistence.Event {
		return persistence.Event{Seq: seq, Kind: k, ID: id, Count: n, At: at, Deadline: at + 100}
	}
	fine := persistence.Loaded{
		Snapshot: persistence.Snapshot{Seq: 2, NextID: 3, Committed: []int64{500}, Pending: []persistence.Pending{{ID: 2, ReservedAt: 900, Deadline: 1000}}},
		Events: []persistence.Event{
			ev(3, persistence.EventReserve, 3, 1, 1200), // 500, pending 2 (a pin at 1000 now), 3: full
			ev(4, persistence.EventRelease, 3, 0, 0),
			ev(5, persistence.EventReserve, 4, 1, 1600), // 500 expired: 1000 and 4
			ev(6, persistence.EventCommit, 4, 0, 1610),
		},
	}
	r := replay("a", fine, 3, 1000)
	if len(r.over) != 0 || len(r.broken) != 0 || r.grants != 2 || r.full != 1 || r.events != 4 {
		t.Fatalf("replay: %+v", r)
	}
	over := fine
	over.Events = append(fine.Events[:1:1], ev(4, persistence.EventReserve, 4, 1, 1300))
	if r := replay("a", over, 3, 1000); len(r.over) != 1 {
		t.Fatalf("4 slots in use with a limit of 3 not reported: %+v", r)
	}
	broken := fine
	broken.Events = []persistence.Event{ev(2, persistence.EventCommit, 99, 0, 1200)}
	if r := replay("a", broken, 3, 1000); len(r.broken) != 2 {
		t.Fatalf("a seq going back and a commit of an unknown reservation not reported: %+v", r)
	}
	crowded := persistence.Loaded{Snapshot: persistence.Snapshot{Committed: []int64{1, 2, 3, 4}}}
	if r := replay("a", crowded, 3, 1000); len(r.over) != 2 {
		t.Fatalf("a snapshot with 4 pins in one window, limit 3, not reported twice: %+v", r)
	}
}

// TestCheckStoreFindsLostGrants writes a store with an engine, then claims
// more acknowledged grants than it holds: the check must call them lost.
func TestCheckStoreFindsLostGrants(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := soakEngineConfig(10, time.Hour, time.Minute, time.Minute, 16)
	store, err := enginestore.Open(dir, soakStoreOptions, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	eng, err := actors.New(cfg, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := eng.Reserve(ctx, "lost", 2)
	if err != nil || g.Granted != 2 {
		t.Fatalf("reserve: %+v %v", g, err)
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	acked := newAckLedger(time.Hour.Milliseconds(), time.Minute.Milliseconds())
	at := g.At.UnixMilli()
	acked.line(fmt.Sprintf("G lost %d 2 %d", g.First, at))
	c, err := checkStore(ctx, dir, 1, cfg, acked, zerolog.Nop())
	if err != nil || len(c.viols) != 0 || c.accounts != 1 || c.maxUsed != 2 || c.journaled != 0 {
		t.Fatalf("honest ledger over a cleanly closed store: %+v, error %v", c, err)
	}
	acked.line(fmt.Sprintf("G lost %d 1 %d", g.First+2, at)) // never granted by this store
	c, err = checkStore(ctx, dir, 2, cfg, acked, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.viols) != 1 || c.viols[0].Kind != violLost || c.viols[0].Cycle != 2 {
		t.Fatalf("violations %v, want one lost grant in cycle 2", c.viols)
	}
}

// journaled lists the accounts of the store in dir whose journal holds
// events not folded into a snapshot: what a restarted engine replays.
// Opening the store changes the files of dir.
func journaled(t *testing.T, dir string) []string {
	t.Helper()
	store, err := enginestore.Open(dir, soakStoreOptions, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := store.Journaled(t.Context(), func(a string) error { out = append(out, a); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dirDigest returns the size and SHA-256 of every file under dir, by
// path relative to dir.
func dirDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		n, err := io.Copy(h, f)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = fmt.Sprintf("%d bytes, sha256 %x", n, h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSoakCheckLeavesTheKilledStoreAsItWas kills a soak child under load,
// then runs the check the soak runs between two cycles. The check must
// leave the data directory byte for byte as the kill left it, so that the
// next engine process restarts over the crashed store and recovers it
// itself, and must count the accounts that engine has to replay.
func TestSoakCheckLeavesTheKilledStoreAsItWas(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A long window and idle time, so that no journal event expires and
	// few accounts are passivated (and snapshotted) before the kill.
	co := soakChildOptions{
		dataDir: dir, accounts: 20, callers: 4, limit: 100, window: time.Hour,
		lease: time.Minute, idle: time.Minute, seed: 7, snapshotEvery: 16, logLevel: "warn",
	}
	acked := newAckLedger(co.window.Milliseconds(), co.lease.Milliseconds())
	if _, err := killChild(ctx, exe, co, 1200*time.Millisecond, acked); err != nil {
		t.Fatal(err)
	}
	if acked.slots == 0 {
		t.Fatal("the child acknowledged nothing before the kill")
	}
	killed := dirDigest(t, dir)
	cfg := soakEngineConfig(co.limit, co.window, co.lease, co.idle, co.snapshotEvery)
	c, err := checkStore(ctx, dir, 1, cfg, acked, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.viols) != 0 {
		t.Fatalf("check found violations: %v", c.viols)
	}
	if checked := dirDigest(t, dir); !maps.Equal(killed, checked) {
		var changed []string
		for _, name := range slices.Sorted(maps.Keys(killed)) {
			if checked[name] != killed[name] {
				changed = append(changed, fmt.Sprintf("%s: %s, as the kill left it %s", name, cmp.Or(checked[name], "removed"), killed[name]))
			}
		}
		for _, name := range slices.Sorted(maps.Keys(checked)) {
			if _, ok := killed[name]; !ok {
				changed = append(changed, name+": created")
			}
		}
		t.Errorf("the check changed the data directory the next engine process restarts over:\n%s", strings.Join(changed, "\n"))
	}
	left := journaled(t, dir)
	if len(left) == 0 || c.journaled != len(left) {
		t.Errorf("the check counted %d accounts to replay; the killed store holds %d (%v)", c.journaled, len(left), left)
	}
}

// TestSoakStepsTheWallClockOnceAnchored: a child killed before it stored
// the engine's clock anchor leaves none, and the next child takes engine
// time from its wall clock, as the engine must. So the soak steps a
// child's wall clock only once a child has printed READY (after the
// anchor was stored): here the first child never gets there, and the
// second, unstepped, starts on the true time, which a stepped clock would
// have put off it (a clock violation). The children are a script that
// records its flags.
func TestSoakStepsTheWallClockOnceAnchored(t *testing.T) {
	if clockFollowsWall {
		t.Skip("no boot ID: the soak never steps the wall clock")
	}
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "fake-pinbench")
	script := fmt.Sprintf(`#!/bin/sh
d=%q
n=$(($(cat "$d/count" 2>/dev/null || echo 0) + 1))
echo $n >"$d/count"
echo "$@" >>"$d/args"
[ $n -ge 2 ] && echo "READY $(date +%%s%%3N)"
exec sleep 60
`, dir)
	if err := os.WriteFile(exe, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	o := &soakOptions{cycles: 3, callers: 1, accounts: 1, limit: 10, window: time.Second, lease: 100 * time.Millisecond,
		idle: time.Second, killMin: 300 * time.Millisecond, killMax: 300 * time.Millisecond, seed: 1,
		dataDir: filepath.Join(dir, "data"), logLevel: "warn", exe: exe}
	rep, err := runSoak(context.Background(), o, io.Discard, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for line := range strings.Lines(string(args)) {
		f := strings.Fields(line)
		if i := slices.Index(f, "--wall-step"); i >= 0 && i+1 < len(f) {
			steps = append(steps, f[i+1])
		}
	}
	if len(steps) != 3 || steps[0] != "0s" || steps[1] != "0s" || steps[2] == "0s" {
		t.Errorf("wall steps of the children = %q, want 0s until one printed READY, then a step", steps)
	}
	if rep.KilledBeforeReady != 1 || rep.ClockProblems != 0 || rep.WallSteps != 1 {
		t.Errorf("killed before READY %d, clock problems %d (%v), stepped starts %d; want 1, 0, 1",
			rep.KilledBeforeReady, rep.ClockProblems, rep.Violations, rep.WallSteps)
	}
}
