package redislog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// requireRedisEnv, when "1", turns a missing redis-server into a failure.
const requireRedisEnv = "PINBOT_REQUIRE_REDIS"

// startServer starts a redis-server for the test, or skips it when none
// is installed (fails instead when PINBOT_REQUIRE_REDIS=1).
func startServer(t *testing.T, fsync string) *Server {
	t.Helper()
	if _, err := Find(""); err != nil {
		if os.Getenv(requireRedisEnv) == "1" {
			t.Fatalf("%s=1 but %v", requireRedisEnv, err)
		}
		t.Skipf("%v (run `make bench-deps`)", err)
	}
	srv, err := Start(context.Background(), ServerOptions{AppendFsync: fsync, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	return srv
}

// model is the sliding-window log by brute force: every grant time kept,
// counted in full at each decision.
type model struct {
	limit  int
	window int64
	grants map[string][]int64
}

func (m *model) allow(key string, now int64) bool {
	n := 0
	for _, t := range m.grants[key] {
		if t > now-m.window {
			n++
		}
	}
	if n >= m.limit {
		return false
	}
	m.grants[key] = append(m.grants[key], now)
	return true
}

func TestLimiterMatchesBruteForce(t *testing.T) {
	srv := startServer(t, "everysec")
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	sha, err := Load(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	// A 60 s window: the keys' PEXPIRE follows the server's clock, and the
	// test's own clock moves by at most a few windows.
	const limit, window = 5, 60 * time.Second
	l := NewLimiter(c, sha, limit, window)
	m := &model{limit: limit, window: window.Milliseconds(), grants: map[string][]int64{}}
	r := rand.New(rand.NewPCG(7, 8))
	now := time.UnixMilli(1_800_000_000_000)
	var granted, denied int
	for i := range 3000 {
		switch r.IntN(4) {
		case 0: // several decisions in the same millisecond
		case 1, 2:
			now = now.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		default:
			now = now.Add(time.Duration(r.IntN(30_000)) * time.Millisecond)
		}
		key := fmt.Sprint("model-", r.IntN(2))
		got, err := l.AllowAt(ctx, key, now)
		if err != nil {
			t.Fatal(err)
		}
		if want := m.allow(key, now.UnixMilli()); got != want {
			t.Fatalf("step %d: AllowAt(%s, %d) = %v want %v", i, key, now.UnixMilli(), got, want)
		}
		if got {
			granted++
		} else {
			denied++
		}
	}
	if granted < 500 || denied < 500 {
		t.Fatalf("granted %d, denied %d: the walk must both fill and drain windows", granted, denied)
	}
	// The boundary: a grant at t still counts at t+window-1 ms, not at
	// t+window.
	t0 := time.UnixMilli(1_900_000_000_000)
	for i := range limit {
		if ok, _ := l.AllowAt(ctx, "edge", t0); !ok {
			t.Fatalf("edge: grant %d at t0 refused", i)
		}
	}
	if ok, _ := l.AllowAt(ctx, "edge", t0.Add(window-time.Millisecond)); ok {
		t.Fatal("edge: granted at t0+window-1ms, want refused")
	}
	if ok, _ := l.AllowAt(ctx, "edge", t0.Add(window)); !ok {
		t.Fatal("edge: refused at t0+window, want granted")
	}
	ttl, err := c.PTTL(ctx, KeyPrefix+"edge").Result()
	if err != nil || ttl <= 0 || ttl > window {
		t.Fatalf("PTTL = %v, %v; want a TTL of at most the window", ttl, err)
	}
}

func TestLimiterReloadsLostScript(t *testing.T) {
	srv := startServer(t, "always")
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	sha, err := Load(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	ok, err := NewLimiter(c, sha, 1, time.Minute).AllowAt(ctx, "flushed", time.Now())
	if err != nil || !ok {
		t.Fatalf("AllowAt after SCRIPT FLUSH = %v, %v; want true, nil", ok, err)
	}
}

func TestStartErrors(t *testing.T) {
	_, err := Start(context.Background(), ServerOptions{Binary: "no-such-redis-server-here", AppendFsync: "always"})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("Start with a missing binary: %v, want ErrNotInstalled", err)
	}
	if _, err := Find(""); err != nil {
		if os.Getenv(requireRedisEnv) == "1" {
			t.Fatalf("%s=1 but %v", requireRedisEnv, err)
		}
		t.Skip(err)
	}
	_, err = Start(context.Background(), ServerOptions{AppendFsync: "no"})
	if err == nil || !strings.Contains(err.Error(), `appendfsync "no"`) {
		t.Fatalf("Start with appendfsync no: %v", err)
	}
}

func TestStopRemovesDirAndProcess(t *testing.T) {
	srv := startServer(t, "everysec")
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv.Dir); !os.IsNotExist(err) {
		t.Fatalf("data directory still there after Stop: %v", err)
	}
	if err := ping(srv.Addr); err == nil {
		t.Fatal("server still answers after Stop")
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}
