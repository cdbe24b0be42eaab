package main

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want paceSpec
		err  string // in the error; "" for none
	}{
		{in: "20000", want: paceSpec{PerS: 20000}},
		{in: "2.5e4", want: paceSpec{PerS: 25000}},
		{in: "0.5", want: paceSpec{PerS: 0.5}},
		{in: "0.5xredis-always", want: paceSpec{Fraction: 0.5, Of: sysRedisAlways}},
		{in: "1xpinbot-durable", want: paceSpec{Fraction: 1, Of: sysDurable}},
		// The name after the first x: x/time/rate's name starts with one.
		{in: "0.25xxrate", want: paceSpec{Fraction: 0.25, Of: sysXRate}},
		{in: "1.5xactor", want: paceSpec{Fraction: 1.5, Of: sysActor}},
		{in: "0", err: "must be above 0"},
		{in: "-100", err: "must be above 0"},
		{in: "NaN", err: "must be above 0"},
		{in: "2e9", err: "at most 1e+09"},
		{in: "0xredis-always", err: "the fraction must be above 0"},
		{in: "-0.5xredis-always", err: "the fraction must be above 0"},
		{in: "11xactor", err: "at most 10"},
		{in: "fast", err: "want decisions per second"},
		{in: "", err: "want decisions per second"},
		{in: "x", err: "want decisions per second"},
		{in: "halfxredis-always", err: "want decisions per second"},
		{in: "0.5xmemcached", err: `unknown system "memcached" (want one of pinbot-durable, pinbot-relaxed, redis-always, redis-everysec, xrate, actor)`},
		{in: "0.5x", err: `unknown system ""`},
		{in: "0.5xRedis-Always", err: `unknown system "Redis-Always"`},
	}
	for i, tt := range tests {
		got, err := parseRate(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("step %d: parseRate(%q) = %+v, %v want %+v", i, tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("step %d: parseRate(%q) = %+v, %v want an error containing %q", i, tt.in, got, err, tt.err)
		case tt.err != "" && !strings.Contains(err.Error(), `--rate "`+tt.in+`"`):
			t.Errorf("step %d: parseRate(%q): %v does not name the value", i, tt.in, err)
		}
		var ue *usageError
		if err != nil && !errors.As(err, &ue) {
			t.Errorf("step %d: parseRate(%q): %v is not a usage error", i, tt.in, err)
		}
	}
}

func TestCompareRateFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args               []string
		wantPace           paceSpec
		wantRate           float64       // spec.Rate once parsed
		wantPaced, wantRef time.Duration // the paced runs' and the reference run's duration
	}{
		// Closed loop: 10 s.
		{args: nil, wantPaced: 10 * time.Second, wantRef: 10 * time.Second},
		// Paced: a minute unless told, the reference 10 s unless told.
		{args: []string{"--rate", "5000"}, wantPace: paceSpec{PerS: 5000}, wantRate: 5000, wantPaced: time.Minute, wantRef: time.Minute},
		{args: []string{"--rate", "0.5xredis-always"}, wantPace: paceSpec{Fraction: 0.5, Of: sysRedisAlways}, wantPaced: time.Minute, wantRef: 10 * time.Second},
		{args: []string{"--rate", "0.5xactor", "--duration", "3s"}, wantPace: paceSpec{Fraction: 0.5, Of: sysActor}, wantPaced: 3 * time.Second, wantRef: 3 * time.Second},
		{args: []string{"--rate", "700", "--duration", "2s"}, wantPace: paceSpec{PerS: 700}, wantRate: 700, wantPaced: 2 * time.Second, wantRef: 2 * time.Second},
	}
	for i, tt := range tests {
		o, err := parseCompareFlags(tt.args, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("step %d: %q: %v", i, tt.args, err)
		}
		if o.pace != tt.wantPace || o.spec.Rate != tt.wantRate || o.spec.Duration != tt.wantPaced || o.closedSpec.Duration != tt.wantRef || o.closedSpec.Rate != 0 {
			t.Errorf("step %d: %q: pace %+v rate %v, durations %v and %v (reference rate %v); want %+v %v, %v and %v",
				i, tt.args, o.pace, o.spec.Rate, o.spec.Duration, o.closedSpec.Duration, o.closedSpec.Rate,
				tt.wantPace, tt.wantRate, tt.wantPaced, tt.wantRef)
		}
	}
	// The reference is measured even when --only leaves it out of the
	// paced runs, but not when --skip-redis leaves Redis out altogether.
	o, err := parseCompareFlags([]string{"--rate", "0.5xredis-always", "--only", "xrate"}, &bytes.Buffer{})
	if err != nil || !o.needsRedis() {
		t.Errorf("--only xrate with a Redis reference: %v, needs Redis %v", err, err == nil && o.needsRedis())
	}
	_, err = parseCompareFlags([]string{"--rate", "0.5xredis-always", "--skip-redis"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--skip-redis leaves out") {
		t.Errorf("--skip-redis with a Redis reference: %v", err)
	}
}

func TestComparePacedUsageErrors(t *testing.T) {
	t.Parallel()
	for i, tt := range []struct{ rate, want string }{
		{"0", `--rate "0": decisions per second must be above 0`},
		{"-3", `--rate "-3"`},
		{"0.5xmemcached", `unknown system "memcached" (want one of pinbot-durable`},
		{"lots", `--rate "lots": want decisions per second`},
	} {
		r := pinbench(t, "compare", "--rate", tt.rate)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "pinbench compare --help") {
			t.Errorf("step %d: --rate %q: exit %d, stderr:\n%s\nwant %d and %q", i, tt.rate, r.code, r.stderr, exitUsage, tt.want)
		}
	}
}

// TestComparePacedSmoke paces the two cheap systems at the same rate.
func TestComparePacedSmoke(t *testing.T) {
	t.Parallel()
	plots := t.TempDir()
	r := pinbench(t, "compare", "-n", "1000", "-c", "4", "--rate", "2000", "--duration", "300ms", "--only", "actor,xrate",
		"--json", "--quiet", "--plot", plots)
	r.want(t, exitOK)
	var rep compareReport
	r.decode(t, &rep)
	if n := strings.Count(r.stdout, `"late_starts"`); n != 2 {
		t.Errorf("late_starts given for %d systems, want 2", n)
	}
	if rep.Load != loadPaced || rep.OfferedPerS != 2000 || rep.RateOf != nil || len(rep.Systems) != 2 {
		t.Fatalf("load %q at %v/s, rate of %+v, %d systems; want paced at 2000/s, 2 systems", rep.Load, rep.OfferedPerS, rep.RateOf, len(rep.Systems))
	}
	for i, s := range rep.Systems {
		if want := []string{sysXRate, sysActor}[i]; s.ID != want {
			t.Errorf("system %d is %s, want %s", i, s.ID, want)
		}
		// Decisions 0 to 599 are due before 300 ms, one every 500 µs.
		if s.Decisions != 600 || s.Fingerprint != rep.Systems[0].Fingerprint {
			t.Errorf("%s: %d decisions, fingerprint %s; want 600, the same as %s", s.ID, s.Decisions, s.Fingerprint, rep.Systems[0].ID)
		}
		// The last answer comes at 299.5 ms at the earliest.
		if s.DecisionsPerS <= 0 || s.DecisionsPerS > 600/0.2995 {
			t.Errorf("%s: %v decisions/s offered 2000/s", s.ID, s.DecisionsPerS)
		}
		l := s.Latency
		if l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max || s.Late < 0 || s.Late >= s.Decisions {
			t.Errorf("%s: latency %+v, late %d", s.ID, l, s.Late)
		}
		if s.DurableRatio != 0 || s.RelaxedRatio != 0 {
			t.Errorf("%s: throughput ratios %v, %v in a paced run", s.ID, s.DurableRatio, s.RelaxedRatio)
		}
	}
	if len(rep.Targets) != 0 || len(rep.LatencyTargets) != 0 {
		t.Errorf("targets %+v %+v without pinbot and Redis", rep.Targets, rep.LatencyTargets)
	}
	if len(rep.PlotFiles) != 2 {
		t.Errorf("charts %v, want compare_paced_latency, PNG and SVG", rep.PlotFiles)
	}
	for _, f := range rep.PlotFiles {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 || !strings.HasPrefix(filepath.Base(f), "compare_paced_latency.") {
			t.Errorf("chart %s: %v", f, err)
		}
	}
}

// TestComparePacedFraction paces x/time/rate at half of what the bare
// actor round trip did closed loop in the same run.
func TestComparePacedFraction(t *testing.T) {
	t.Parallel()
	r := pinbench(t, "compare", "-n", "1000", "-c", "4", "--rate", "0.5xactor", "--duration", "200ms", "--only", "xrate", "--json", "--quiet")
	r.want(t, exitOK)
	var rep compareReport
	r.decode(t, &rep)
	ref := rep.RateOf
	if ref == nil || ref.System != sysActor || ref.Fraction != 0.5 || ref.Closed.ID != sysActor || ref.Closed.Decisions == 0 || ref.Closed.Late != 0 {
		t.Fatalf("rate of %+v, want the actor's closed-loop run", ref)
	}
	if rep.OfferedPerS != ref.Closed.DecisionsPerS/2 {
		t.Errorf("offered %v/s, want half of %v/s", rep.OfferedPerS, ref.Closed.DecisionsPerS)
	}
	if len(rep.Systems) != 1 || rep.Systems[0].ID != sysXRate {
		t.Fatalf("systems %+v, want x/time/rate alone", rep.Systems)
	}
	// Decision i is due at i periods: those before 200 ms are offered.
	period := time.Duration(float64(time.Second) / rep.OfferedPerS)
	if want := int64(math.Ceil(float64(200*time.Millisecond) / float64(period))); rep.Systems[0].Decisions != want {
		t.Errorf("x/time/rate: %d decisions, want %d (200ms at %v/s)", rep.Systems[0].Decisions, want, rep.OfferedPerS)
	}
}

func TestComparePacedTextOutput(t *testing.T) {
	t.Parallel()
	r := pinbench(t, "compare", "-n", "1000", "-c", "2", "--rate", "0.1xxrate", "--duration", "100ms", "--only", "xrate")
	r.want(t, exitOK)
	for _, w := range []string{"pinbench compare, paced:", "0.1 × x/time/rate in-process's closed-loop maximum in this run",
		"scheduled instant", "decisions/s", "p99.9", "max", "late", "x/time/rate in-process"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "pacing every system at 0.1 × that") {
		t.Errorf("no progress on stderr:\n%s", r.stderr)
	}
}

func TestLatencyTargets(t *testing.T) {
	t.Parallel()
	row := func(id string, p99, p999 time.Duration) compareRow {
		return compareRow{ID: id, Name: systemNames[id], Latency: latency{P99: int64(p99), P999: int64(p999)}}
	}
	tests := []struct {
		rows []compareRow
		want []bool // met, p99 then p99.9
	}{
		{[]compareRow{row(sysDurable, 2*time.Millisecond, 9*time.Millisecond), row(sysRedisAlways, 3*time.Millisecond, 10*time.Millisecond)}, []bool{true, true}},
		{[]compareRow{row(sysDurable, 2*time.Millisecond, 11*time.Millisecond), row(sysRedisAlways, 3*time.Millisecond, 10*time.Millisecond)}, []bool{true, false}},
		// Equal is not below.
		{[]compareRow{row(sysRedisAlways, 3*time.Millisecond, 10*time.Millisecond), row(sysDurable, 3*time.Millisecond, 5*time.Millisecond)}, []bool{false, true}},
		// Nothing to compare with.
		{[]compareRow{row(sysDurable, time.Millisecond, time.Millisecond), row(sysRedisEverysec, time.Second, time.Second)}, nil},
		{[]compareRow{row(sysRedisAlways, time.Millisecond, time.Millisecond)}, nil},
	}
	for i, tt := range tests {
		rep := compareReport{Load: loadPaced, OfferedPerS: 1000, Systems: tt.rows}
		rep.addLatencyTargets()
		if len(rep.LatencyTargets) != len(tt.want) {
			t.Fatalf("step %d: targets %+v, want %d", i, rep.LatencyTargets, len(tt.want))
		}
		var out bytes.Buffer
		printPaced(&out, rep)
		for k, met := range tt.want {
			lt := rep.LatencyTargets[k]
			q := []string{"p99", "p99.9"}[k]
			if lt.Met != met || !strings.Contains(lt.What, "pinbot durable "+q+" below redis log, appendfsync always's") {
				t.Errorf("step %d: target %+v, want %s met %v", i, lt, q, met)
			}
			verdict := "met"
			if !met {
				verdict = "MISSED"
			}
			if !strings.Contains(out.String(), lt.What) || strings.Count(out.String(), verdict) < 1 {
				t.Errorf("step %d: output lacks %q %s:\n%s", i, lt.What, verdict, out.String())
			}
		}
	}
}

func TestPacedTableShowsLateStarts(t *testing.T) {
	t.Parallel()
	rep := compareReport{Load: loadPaced, OfferedPerS: 1000, Systems: []compareRow{{
		ID: sysActor, Name: systemNames[sysActor], Decisions: 2000, Granted: 2000, Late: 50,
		Latency: latency{P50: int64(time.Millisecond), Max: int64(1234 * time.Millisecond)},
	}}}
	var out bytes.Buffer
	printPaced(&out, rep)
	for _, w := range []string{"1,000 decisions/s offered", "50 (2.5%)", "1.23s", "1.00ms"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
}

// TestComparePacedRedis paces pinbot durable and Redis always at half of
// Redis's closed-loop maximum and checks the latency targets are there.
func TestComparePacedRedis(t *testing.T) {
	t.Parallel()
	if !haveRedis(t) {
		t.Skip("redis-server not installed (run `make bench-deps`)")
	}
	r := pinbench(t, "compare", "-n", "1000", "-c", "8", "--ops", "400", "--rate", "0.5xredis-always",
		"--only", "pinbot-durable,redis-always", "--json", "--quiet")
	r.want(t, exitOK)
	var rep compareReport
	r.decode(t, &rep)
	if rep.RateOf == nil || rep.RateOf.System != sysRedisAlways || rep.RateOf.Closed.Decisions != 400 {
		t.Fatalf("rate of %+v, want Redis always's closed-loop run of 400 decisions", rep.RateOf)
	}
	if rep.OfferedPerS != rep.RateOf.Closed.DecisionsPerS/2 || len(rep.Systems) != 2 {
		t.Fatalf("offered %v/s to %d systems, want half of %v/s to 2", rep.OfferedPerS, len(rep.Systems), rep.RateOf.Closed.DecisionsPerS)
	}
	for _, s := range rep.Systems {
		if s.Decisions != 400 || s.Fingerprint != rep.RateOf.Closed.Fingerprint {
			t.Errorf("%s: %d decisions, fingerprint %s; want 400, the reference's %s", s.ID, s.Decisions, s.Fingerprint, rep.RateOf.Closed.Fingerprint)
		}
	}
	if len(rep.LatencyTargets) != 2 {
		t.Fatalf("latency targets %+v, want p99 and p99.9", rep.LatencyTargets)
	}
	durable, redis := rep.Systems[0], rep.Systems[1]
	if lt := rep.LatencyTargets[0]; lt.PinbotNS != durable.Latency.P99 || lt.OtherNS != redis.Latency.P99 || lt.Met != (lt.PinbotNS < lt.OtherNS) {
		t.Errorf("p99 target %+v, durable %+v, redis %+v", lt, durable.Latency, redis.Latency)
	}
	if lt := rep.LatencyTargets[1]; lt.PinbotNS != durable.Latency.P999 || lt.OtherNS != redis.Latency.P999 || lt.Met != (lt.PinbotNS < lt.OtherNS) {
		t.Errorf("p99.9 target %+v, durable %+v, redis %+v", lt, durable.Latency, redis.Latency)
	}
}
