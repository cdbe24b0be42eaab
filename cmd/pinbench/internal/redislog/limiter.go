package redislog

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Script decides one grant atomically inside Redis. KEYS[1] is the
// account's sorted set; ARGV are the decision time and the window (Unix
// ms), the limit, and a member name unique to this decision. A grant at t
// counts at every instant now with t > now-window, as in pinbot's window.
// It returns 1 when granted, 0 when the account is at its limit.
const Script = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return 1
`

// KeyPrefix starts every key the limiter writes.
const KeyPrefix = "pinbench:"

// Load loads Script into the server behind c and returns its SHA1 for
// EVALSHA.
func Load(ctx context.Context, c redis.Scripter) (string, error) {
	sha, err := c.ScriptLoad(ctx, Script).Result()
	if err != nil {
		return "", fmt.Errorf("redislog: SCRIPT LOAD: %w", err)
	}
	return sha, nil
}

// Limiter is the sliding-window log of every account, kept in Redis. It is
// safe for simultaneous use by multiple goroutines, as far as the client it
// runs on is.
type Limiter struct {
	run    redis.Scripter
	sha    string
	limit  int
	window int64 // ms
	seq    atomic.Uint64
}

// NewLimiter returns a limiter allowing limit grants per account in any
// window, running the script loaded as sha through run (a client, or an
// auto-pipeliner over one).
func NewLimiter(run redis.Scripter, sha string, limit int, window time.Duration) *Limiter {
	return &Limiter{run: run, sha: sha, limit: limit, window: window.Milliseconds()}
}

// AllowAt decides one grant of account at now with one EVALSHA (an EVAL
// if the server lost the script) and reports whether it was granted. now
// is passed in, not read from Redis, so that decisions can be replayed.
func (l *Limiter) AllowAt(ctx context.Context, account string, now time.Time) (bool, error) {
	ms := now.UnixMilli()
	keys := []string{KeyPrefix + account}
	member := strconv.FormatInt(ms, 36) + "." + strconv.FormatUint(l.seq.Add(1), 36)
	res, err := l.run.EvalSha(ctx, l.sha, keys, ms, l.window, l.limit, member).Int64()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		res, err = l.run.Eval(ctx, Script, keys, ms, l.window, l.limit, member).Int64()
	}
	if err != nil {
		return false, fmt.Errorf("redislog: account %q: %w", account, err)
	}
	return res == 1, nil
}
