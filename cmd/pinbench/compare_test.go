package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/cmd/pinbench/internal/redislog"
)

// requireRedisEnv, when "1", turns a missing redis-server into a test
// failure instead of a skip: CI sets it after `make bench-deps`.
const requireRedisEnv = "PINBOT_REQUIRE_REDIS"

// haveRedis reports whether redis-server is installed; when it is not and
// PINBOT_REQUIRE_REDIS=1, the test fails.
func haveRedis(t *testing.T) bool {
	t.Helper()
	if _, err := redislog.Find(""); err != nil {
		if os.Getenv(requireRedisEnv) == "1" {
			t.Fatalf("%s=1 but %v", requireRedisEnv, err)
		}
		return false
	}
	return true
}

func TestCompareSmoke(t *testing.T) {
	t.Parallel()
	args := []string{"compare", "-n", "1000", "-c", "4", "--ops", "400", "--json", "--quiet", "--plot", t.TempDir()}
	want := allSystems
	if !haveRedis(t) {
		t.Log("redis-server not installed: comparing without Redis (run `make bench-deps`)")
		args = append(args, "--skip-redis")
		want = []string{sysDurable, sysRelaxed, sysXRate, sysActor}
	}
	r := pinbench(t, args...)
	r.want(t, exitOK)
	var rep compareReport
	r.decode(t, &rep)
	if len(rep.Systems) != len(want) {
		t.Fatalf("%d systems measured, want %d: %+v", len(rep.Systems), len(want), rep.Systems)
	}
	durable := rep.Systems[0]
	for i, s := range rep.Systems {
		if s.ID != want[i] {
			t.Errorf("system %d is %s, want %s", i, s.ID, want[i])
		}
		if s.Decisions != 400 || s.DecisionsPerS <= 0 || s.Latency.P50 <= 0 {
			t.Errorf("%s: %d decisions at %v/s, p50 %v", s.ID, s.Decisions, s.DecisionsPerS, s.Latency.P50)
		}
		// Every system was asked about the same 400 accounts.
		if s.Fingerprint != durable.Fingerprint {
			t.Errorf("%s: workload fingerprint %s, pinbot durable's %s", s.ID, s.Fingerprint, durable.Fingerprint)
		}
		if s.DurableRatio <= 0 || s.RelaxedRatio <= 0 {
			t.Errorf("%s: ratios %v and %v, want both", s.ID, s.DurableRatio, s.RelaxedRatio)
		}
	}
	if durable.DurableRatio != 1 {
		t.Errorf("pinbot durable ÷ itself = %v", durable.DurableRatio)
	}
	if len(rep.Targets) != len(want)-3 {
		t.Errorf("targets %+v, want one per Redis mode and one for the actor round trip", rep.Targets)
	}
	if len(rep.PlotFiles) != 4 {
		t.Errorf("charts %v, want compare_throughput and compare_latency, PNG and SVG", rep.PlotFiles)
	}
}

// TestBaselinesShareWorkload checks that the x/time/rate baseline and the
// Redis limiter are driven by the same generator: same decisions, same
// accounts, same callers.
func TestBaselinesShareWorkload(t *testing.T) {
	t.Parallel()
	if !haveRedis(t) {
		t.Skip("redis-server not installed (run `make bench-deps`)")
	}
	for _, pipeline := range []string{pipelineAuto, pipelineOff} {
		r := pinbench(t, "compare", "-n", "1000", "-c", "8", "--ops", "500", "--dist", "zipf", "--seed", "9",
			"--only", "xrate,redis-everysec", "--redis-pipeline", pipeline, "--json", "--quiet")
		r.want(t, exitOK)
		var rep compareReport
		r.decode(t, &rep)
		if len(rep.Systems) != 2 {
			t.Fatalf("%d systems, want 2", len(rep.Systems))
		}
		redis, xrate := rep.Systems[0], rep.Systems[1]
		if redis.ID != sysRedisEverysec || xrate.ID != sysXRate {
			t.Fatalf("systems %s, %s", redis.ID, xrate.ID)
		}
		if redis.Decisions != xrate.Decisions || redis.Fingerprint != xrate.Fingerprint {
			t.Fatalf("redis: %d decisions, fingerprint %s; x/time/rate: %d, %s", redis.Decisions, redis.Fingerprint, xrate.Decisions, xrate.Fingerprint)
		}
		// Both limiters allow 100 per account at once: the same grants.
		if redis.Granted != xrate.Granted {
			t.Errorf("redis granted %d, x/time/rate %d, of the same 500 decisions", redis.Granted, xrate.Granted)
		}
		if !strings.Contains(redis.Notes, map[string]string{pipelineAuto: "auto-pipelining", pipelineOff: "no pipelining"}[pipeline]) {
			t.Errorf("--redis-pipeline %s: notes %q", pipeline, redis.Notes)
		}
	}
}

// TestCompareWithoutRedisServer checks the message when redis-server is
// missing.
func TestCompareWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server on it
	r := pinbench(t, "compare", "-n", "1000", "-c", "2", "--ops", "10", "--quiet")
	r.want(t, exitFailure)
	for _, w := range []string{"redis-server is not installed", "make bench-deps", "--skip-redis"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	r = pinbench(t, "compare", "--redis-server", filepath.Join(t.TempDir(), "redis-server"), "--only", "redis-always", "--quiet")
	r.want(t, exitFailure)
	if !strings.Contains(r.stderr, "--redis-server") {
		t.Errorf("stderr does not name --redis-server:\n%s", r.stderr)
	}
}
