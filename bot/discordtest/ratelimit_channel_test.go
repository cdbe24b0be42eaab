package discordtest_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// TestChannelRateLimit: with WithChannelRateLimit, the sixth message to a
// channel within 5 s is answered 429 with the wait until the oldest stops
// counting; other channels and DMs count apart.
func TestChannelRateLimit(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, time.November, 16, 12, 0, 0, 0, time.UTC)
	clock := discordtest.NewManualClock(t0)
	s := newServer(t, discordtest.WithClock(clock.Now),
		discordtest.WithChannelRateLimit(discordtest.ChannelMessageLimit, discordtest.ChannelMessageWindow))
	w := addWorld(t, s, 0, 1, 1)
	other, err := s.AddChannel(discordtest.Channel{GuildID: w.guild.ID})
	if err != nil {
		t.Fatal(err)
	}
	dm := call(t, s, "POST", "/users/@me/channels", map[string]any{"recipient_id": w.user.UserID.String()}, true)
	var dmChannel struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(dm.body, &dmChannel); err != nil || dm.status != 200 {
		t.Fatalf("create DM: %d %s", dm.status, dm.body)
	}

	send := func(channel string) httpResult {
		t.Helper()
		return call(t, s, "POST", "/channels/"+channel+"/messages", map[string]any{"content": "x"}, true)
	}
	type rateLimited struct {
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
	}
	steps := []struct {
		at         time.Duration
		channel    string
		status     int
		remaining  string
		retryAfter float64
	}{
		{0, w.channel.ID.String(), 200, "4", 0},
		{time.Second, w.channel.ID.String(), 200, "3", 0},
		{time.Second, w.channel.ID.String(), 200, "2", 0},
		{2 * time.Second, w.channel.ID.String(), 200, "1", 0},
		{2 * time.Second, w.channel.ID.String(), 200, "0", 0},
		{2 * time.Second, w.channel.ID.String(), 429, "0", 3},                      // 5: the first counts until 5 s
		{2 * time.Second, other.ID.String(), 200, "4", 0},                          // 6: another channel
		{2 * time.Second, dmChannel.ID, 200, "4", 0},                               // 7: a DM channel
		{5*time.Second - time.Millisecond, w.channel.ID.String(), 429, "0", 0.001}, // 8
		{5 * time.Second, w.channel.ID.String(), 200, "0", 0},                      // 9: the first stopped counting
		{5 * time.Second, w.channel.ID.String(), 429, "0", 1},                      // 10: the 429s did not count
		{6 * time.Second, w.channel.ID.String(), 200, "1", 0},                      // 11: both sent at 1 s stopped counting
	}
	for i, st := range steps {
		clock.Set(t0.Add(st.at))
		r := send(st.channel)
		if r.status != st.status || r.header.Get("X-RateLimit-Remaining") != st.remaining || r.header.Get("X-RateLimit-Limit") != "5" {
			t.Errorf("step %d: %d, remaining %q, limit %q; want %d, %q, 5: %s", i, r.status,
				r.header.Get("X-RateLimit-Remaining"), r.header.Get("X-RateLimit-Limit"), st.status, st.remaining, r.body)
		}
		if st.status != 429 {
			continue
		}
		var body rateLimited
		if err := json.Unmarshal(r.body, &body); err != nil || body.RetryAfter != st.retryAfter || body.Global ||
			r.header.Get("X-RateLimit-Scope") != "user" || r.header.Get("X-RateLimit-Bucket") == "" ||
			r.header.Get("X-RateLimit-Reset-After") != strconv.FormatFloat(st.retryAfter, 'f', 3, 64) {
			t.Errorf("step %d: 429 body %s headers %v, want retry_after %v", i, r.body, r.header, st.retryAfter)
		}
	}
	if n := len(s.Messages(w.channel.ID)); n != 1+7 {
		t.Errorf("%d messages stored in the channel, want the world's and 7", n)
	}
}

// TestChannelRateLimitOff: without the option nothing is refused.
func TestChannelRateLimitOff(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	for i := range 10 {
		if r := call(t, s, "POST", "/channels/"+w.channel.ID.String()+"/messages", map[string]any{"content": "x"}, true); r.status != 200 {
			t.Fatalf("message %d: %d %s", i, r.status, r.body)
		}
	}
}
