//go:build !race

// These tests open disgo's own gateway, whose v0.19.6 CloseWithCode races
// with its heartbeat goroutine (upstream): they are left out of -race
// builds, and `make gateway` runs them.

package app

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
)

// logWatch keeps the log lines written to it and wakes those waiting for
// one.
type logWatch struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, string(p))
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

// wait waits for a line holding every one of parts.
func (w *logWatch) wait(ctx context.Context, parts ...string) error {
	for {
		w.mu.Lock()
		for _, l := range w.lines {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				w.mu.Unlock()
				return nil
			}
		}
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestDisgoGatewayReadinessAndMetrics runs the whole program against the
// stand-ins with two shards: ready once started; a /pin of two images
// and one answered 429 read back from /metrics; shard 1 closed by Discord
// for good makes /readyz 503 naming it.
func TestDisgoGatewayReadinessAndMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dc := discordtest.NewServer(discordtest.WithShardCount(2), discordtest.WithMaxConcurrency(2))
	ps := pinteresttest.NewServer()
	defer dc.Close()
	defer ps.Close()
	cfg := testConfig(t, dc, ps, t.TempDir())
	cfg.Bot.Shards = 2
	logs := newLogWatch()
	cfg.Log = zerolog.New(logs)
	base := "http://" + cfg.Listener.Addr().String()
	a, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st, body := get(t, base+ReadyPath); st != 200 || strings.TrimSpace(body) != `{"ready":true}` {
		t.Fatalf("readyz once started: %d %s", st, body)
	}

	g, err := dc.AddGuild(discordtest.Guild{Name: "home"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := dc.AddChannel(discordtest.Channel{GuildID: g.ID, Name: "general"})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := dc.AddMember(discordtest.Member{GuildID: g.ID, Username: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	cred := ps.AddAccount("1001", "alicepins", pinteresttest.Board{ID: "b1001", Name: "Cats"})
	if err := a.Links.Link(ctx, alice.UserID.String(), links.Account{ID: "1001", Username: "alicepins", DefaultBoard: "b1001", DefaultBoardName: "Cats"}, cred.Token()); err != nil {
		t.Fatal(err)
	}
	pin := func(images int) {
		t.Helper()
		atts := make([]discordtest.Attachment, images)
		for i := range atts {
			atts[i] = discordtest.Attachment{Filename: "cat.png", ContentType: "image/png", Width: 64, Height: 64}
		}
		m, err := dc.AddMessage(discordtest.Message{ChannelID: ch.ID, Attachments: atts})
		if err != nil {
			t.Fatal(err)
		}
		in, err := dc.Interact(discordtest.Invocation{ChannelID: ch.ID, UserID: alice.UserID,
			Data: discordtest.ChatInput{Name: "pin", Options: []discordtest.CommandOption{{Name: "messages", Value: m.ID.String()}}}})
		if err != nil {
			t.Fatal(err)
		}
		// The deferral, then the report.
		if _, err := dc.WaitResponses(ctx, in.ID, 2); err != nil {
			t.Fatal(err)
		}
	}
	pin(2)
	if n := len(ps.PinsFor("1001")); n != 2 {
		t.Fatalf("%d pins on Pinterest, want 2", n)
	}
	ps.Inject(pinteresttest.RetryAfter(pinteresttest.RateLimited(pinteresttest.PathPins, ""), 60))
	pin(1)

	s := metricstest.Scrape(t, base+metrics.Path)
	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"pinbot_pins_total", []string{"result", "pinned"}, 2},
		{"pinbot_pins_total", []string{"result", "failed"}, 1},
		{"pinbot_pin_failures_total", []string{"reason", "rate_limited"}, 1},
		{"pinbot_upstream_requests_total", []string{"upstream", "pinterest", "route", "POST /v5/pins", "class", "2xx"}, 2},
		{"pinbot_upstream_requests_total", []string{"upstream", "pinterest", "route", "POST /v5/pins", "class", "429"}, 1},
		{"pinbot_upstream_retry_after_seconds", []string{"upstream", "pinterest"}, 1},
		{"pinbot_upstream_requests_total", []string{"upstream", "discord", "route", "PUT /applications/{id}/commands", "class", "2xx"}, 1},
		{"pinbot_upstream_requests_total", []string{"upstream", "discord", "route", "GET /gateway/bot", "class", "2xx"}, 1},
		{"pinbot_upstream_requests_total", []string{"upstream", "discord", "route", "POST /interactions/{id}/{token}/callback", "class", "2xx"}, 2},
		{"pinbot_engine_grants_total", nil, 3},
		{"pinbot_engine_commits_total", nil, 2},
		{"pinbot_engine_releases_total", nil, 1},
		{"pinbot_gateway_shards_connected", nil, 2},
	} {
		if got := s.Get(m.name, m.labels...); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}

	// Discord closes shard 1 with 4004: disgo does not reconnect it.
	if err := dc.Disconnect(1, 4004); err != nil {
		t.Fatal(err)
	}
	if err := logs.wait(ctx, "gateway shard closed and will not reconnect", `"shard":1`); err != nil {
		t.Fatalf("waiting for shard 1 to close: %v", err)
	}
	want := `{"ready":false,"failing":["gateway shard 1 disconnected"]}`
	if st, body := get(t, base+ReadyPath); st != 503 || strings.TrimSpace(body) != want {
		t.Errorf("readyz with shard 1 down: %d %s; want 503 %s", st, body, want)
	}
	if n := metricstest.Scrape(t, base+metrics.Path).Get("pinbot_gateway_shards_connected"); n != 1 {
		t.Errorf("pinbot_gateway_shards_connected = %v with shard 1 down, want 1", n)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
