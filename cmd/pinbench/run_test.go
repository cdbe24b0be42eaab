package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunSmoke(t *testing.T) {
	t.Parallel()
	plots := t.TempDir()
	r := pinbench(t, "run", "-n", "1000", "-c", "1,4", "--ops", "300", "--json", "--quiet", "--plot", plots)
	r.want(t, exitOK)
	var rep runReport
	r.decode(t, &rep)
	if len(rep.Runs) != 2 || rep.Runs[0].Callers != 1 || rep.Runs[1].Callers != 4 {
		t.Fatalf("runs: %+v, want one for 1 caller and one for 4", rep.Runs)
	}
	for i, p := range rep.Runs {
		if p.Decisions != 300 || p.Granted+p.Denied != 300 || p.Granted == 0 {
			t.Errorf("run %d: %d decisions (%d granted, %d denied), want 300", i, p.Decisions, p.Granted, p.Denied)
		}
		if p.DecisionsPerS <= 0 || p.Latency.P50 <= 0 || p.Latency.P50 > p.Latency.P99 || p.Latency.P99 > p.Latency.P999 || p.Latency.P999 > p.Latency.Max {
			t.Errorf("run %d: throughput %v, latency %+v", i, p.DecisionsPerS, p.Latency)
		}
		if p.Memory.Resident != 1000 {
			t.Errorf("run %d: %d resident accounts, want all 1000 (warmed)", i, p.Memory.Resident)
		}
	}
	for _, name := range []string{"throughput.png", "throughput.svg", "latency.png", "latency.svg"} {
		if st, err := os.Stat(filepath.Join(plots, name)); err != nil || st.Size() == 0 {
			t.Errorf("chart %s: %v", name, err)
		}
	}
	if !rep.Durable || rep.Workload.Decision != "Reserve(1)+CommitAsync" {
		t.Errorf("durable %v, decision %q", rep.Durable, rep.Workload.Decision)
	}
}

func TestRunTextOutput(t *testing.T) {
	t.Parallel()
	r := pinbench(t, "run", "-n", "1000", "-c", "2", "--ops", "100", "--durable=false", "--reserve-only", "--dist", "zipf")
	r.want(t, exitOK)
	for _, w := range []string{"pinbot relaxed", "decision = Reserve(1)", "zipf s=1.1", "decisions/s", "p99.9", "per resident account"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "making 1,000 accounts resident") {
		t.Errorf("no progress on stderr:\n%s", r.stderr)
	}
}

func TestRunHalfRateAndRestart(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	r := pinbench(t, "run", "-n", "1000", "-c", "4", "--ops", "200", "--rate", "half", "--restart", "--data-dir", dir, "--json", "--quiet")
	r.want(t, exitOK)
	var rep runReport
	r.decode(t, &rep)
	if len(rep.Runs) != 2 || rep.Runs[0].Load != "closed" || rep.Runs[1].Load != "paced" {
		t.Fatalf("runs %+v, want a closed-loop run then a paced one", rep.Runs)
	}
	top, half := rep.Runs[0], rep.Runs[1]
	if half.OfferedPerS != top.DecisionsPerS/2 {
		t.Errorf("paced at %v/s, want half of %v/s", half.OfferedPerS, top.DecisionsPerS)
	}
	for i, p := range rep.Runs {
		if p.Restart == nil || p.Restart.FirstRequest <= 0 || p.Restart.UsedSeen < restartPins {
			t.Fatalf("run %d: restart %+v, want a first request seeing the %d stored pins", i, p.Restart, restartPins)
		}
	}
	if top.Restart.Populated != 1000 || half.Restart.Populated != 0 {
		t.Errorf("populated %d then %d, want 1000 then 0 (the second restart reuses the store)", top.Restart.Populated, half.Restart.Populated)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("--data-dir store gone after the run: %v", err)
	}
}
