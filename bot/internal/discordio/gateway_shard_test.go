//go:build !race

// These tests open disgo's own gateway, whose CloseWithCode races with its
// heartbeat goroutine (upstream): they are left out of -race builds, and
// `make gateway` runs them.

package discordio

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

func manualGateway(dc *discordtest.Server, shards int) *Gateway {
	return NewGateway(GatewayConfig{
		Token: dc.Token(), URL: dc.GatewayURL(), Shards: shards, Manual: true,
		Log:             slog.New(slog.NewTextHandler(io.Discard, nil)),
		IdentifyLimiter: gateway.NewNoopIdentifyRateLimiter(),
	})
}

// TestDisgoGatewayShardOpenCloseResume: a manual gateway opens no shard by
// itself and only the shards asked for; a shard closed resumably hands its
// session on, and another process's gateway resumes it (RESUME, not
// IDENTIFY); a session Discord refuses falls back to IDENTIFY; a shard
// closed for good returns no session.
func TestDisgoGatewayShardOpenCloseResume(t *testing.T) {
	dc := discordtest.NewServer(discordtest.WithShardCount(3))
	defer dc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	a := manualGateway(dc, 3)
	defer a.Close(ctx)
	if err := a.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if got := a.Shards(); len(got) != 0 || len(dc.Sessions()) != 0 {
		t.Fatalf("after Open: shards %+v, sessions %d; want none", got, len(dc.Sessions()))
	}
	if err := a.OpenShard(ctx, 1, nil); err != nil {
		t.Fatalf("OpenShard(1): %v", err)
	}
	if got := a.Shards(); !slices.Equal(got, []ShardState{{ID: 1, Connected: true}}) {
		t.Fatalf("Shards() = %+v, want shard 1 connected only", got)
	}
	if dc.Identifies(1) != 1 || dc.Identifies(0) != 0 || dc.Identifies(2) != 0 {
		t.Fatalf("identifies: %d %d %d, want shard 1's only", dc.Identifies(0), dc.Identifies(1), dc.Identifies(2))
	}
	if err := a.OpenShard(ctx, 3, nil); err == nil {
		t.Fatal("OpenShard(3) of 3 shards succeeded")
	}

	sess, ok := a.CloseShard(ctx, 1, true)
	want, _ := dc.Session(1)
	if !ok || sess.SessionID != want.ID || sess.Sequence == 0 {
		t.Fatalf("CloseShard resumable = %+v, %v; want session %q", sess, ok, want.ID)
	}
	if got := a.Shards(); len(got) != 0 {
		t.Fatalf("Shards() after close = %+v", got)
	}

	// Another process resumes it.
	b := manualGateway(dc, 3)
	defer b.Close(ctx)
	if err := b.OpenShard(ctx, 1, &sess); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if dc.Resumes(1) != 1 || dc.Identifies(1) != 1 {
		t.Fatalf("after the move: %d resumes, %d identifies; want 1 resume and the first identify only", dc.Resumes(1), dc.Identifies(1))
	}
	if got := b.Shards(); !slices.Equal(got, []ShardState{{ID: 1, Connected: true}}) {
		t.Fatalf("b.Shards() = %+v", got)
	}
	if _, ok := b.CloseShard(ctx, 1, false); ok {
		t.Fatal("a shard closed for good returned a session")
	}

	// A session Discord does not know: identify instead.
	if err := b.OpenShard(ctx, 2, &ShardSession{SessionID: "unknown", Sequence: 3}); err != nil {
		t.Fatalf("resume refused: %v", err)
	}
	if dc.Identifies(2) != 1 || dc.Resumes(2) != 0 {
		t.Fatalf("after a refused resume: %d identifies, %d resumes; want 1 identify", dc.Identifies(2), dc.Resumes(2))
	}
	if got := b.Shards(); !slices.Equal(got, []ShardState{{ID: 2, Connected: true}}) {
		t.Fatalf("b.Shards() = %+v", got)
	}
}

// TestDisgoGatewayShardMoveReplaysDropped: an interaction that reaches a
// shard after it stopped handing events on (a graceful move under way:
// Drop, or Admit refusing it as the process closes) is not lost: the
// session handed on resumes from the last event handed on, and Discord
// replays the interaction to the next holder.
func TestDisgoGatewayShardMoveReplaysDropped(t *testing.T) {
	t.Run("dropped", func(t *testing.T) { testMoveReplays(t, false) })
	t.Run("refused by Admit", func(t *testing.T) { testMoveReplays(t, true) })
}

// guildWithMember adds a guild with a channel and a member to dc.
func guildWithMember(t *testing.T, dc *discordtest.Server) (discordtest.Channel, discordtest.Member) {
	t.Helper()
	g, err := dc.AddGuild(discordtest.Guild{Name: "g"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := dc.AddChannel(discordtest.Channel{GuildID: g.ID, Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := dc.AddMember(discordtest.Member{GuildID: g.ID, Username: "u"})
	if err != nil {
		t.Fatal(err)
	}
	return ch, m
}

func testMoveReplays(t *testing.T, refuse bool) {
	dc := discordtest.NewServer(discordtest.WithShardCount(1))
	defer dc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, m := guildWithMember(t, dc)
	got := make(chan discord.Interaction, 4)
	var closing atomic.Bool
	holder := func() *Gateway {
		gw := manualGateway(dc, 1)
		gw.cfg.OnInteraction = func(i discord.Interaction) { got <- i }
		return gw
	}

	a := holder()
	a.cfg.Admit = func(discord.Interaction) bool { return !closing.Load() }
	defer a.Close(ctx)
	if err := a.OpenShard(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	// The move begins: events from here on are not handed on.
	if refuse {
		closing.Store(true)
	} else {
		a.Drop(0)
	}
	in, err := dc.Interact(discordtest.Invocation{ChannelID: ch.ID, UserID: m.UserID, Data: discordtest.ChatInput{Name: "pin"}})
	if err != nil {
		t.Fatal(err)
	}
	// a's connection receives the interaction, and drops it.
	sent, _ := dc.Session(0)
	for {
		if last := a.sm.Shard(0).LastSequenceReceived(); last != nil && *last >= sent.Seq {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the interaction never reached the first holder: %v", ctx.Err())
		case <-time.After(10 * time.Millisecond): // disgo reads the connection on its own goroutine
		}
	}
	select {
	case i := <-got:
		t.Fatalf("a dropped shard handed on interaction %d", i.ID())
	default:
	}
	sess, ok := a.CloseShard(ctx, 0, true)
	if !ok || sess.Sequence >= sent.Seq {
		t.Fatalf("CloseShard = %+v, %v; want the session before the interaction's event (%d)", sess, ok, sent.Seq)
	}

	b := holder()
	defer b.Close(ctx)
	if err := b.OpenShard(ctx, 0, &sess); err != nil {
		t.Fatal(err)
	}
	select {
	case i := <-got:
		if i.ID() != in.ID {
			t.Fatalf("the next holder got interaction %d, want %d", i.ID(), in.ID)
		}
	case <-ctx.Done():
		t.Fatal("the interaction dropped during the move was never replayed to the next holder")
	}
}

// TestDisgoGatewayShardCheckpointReplay: a shard's Session is a
// checkpoint another process resumes when the holder is gone without a
// handover: Discord replays every event after the checkpoint's sequence,
// those the holder had handed on since included, and they reach the next
// holder marked Replayed until RESUMED; the events after are not marked.
func TestDisgoGatewayShardCheckpointReplay(t *testing.T) {
	dc := discordtest.NewServer(discordtest.WithShardCount(1))
	defer dc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, u := guildWithMember(t, dc)
	post := func() snowflake.ID {
		t.Helper()
		m, err := dc.AddMessage(discordtest.Message{ChannelID: ch.ID, AuthorID: u.UserID, Content: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	holder := func() (*Gateway, chan Message) {
		got := make(chan Message, 8)
		gw := NewGateway(GatewayConfig{
			Token: dc.Token(), URL: dc.GatewayURL(), Shards: 1, Manual: true,
			Log:             slog.New(slog.NewTextHandler(io.Discard, nil)),
			IdentifyLimiter: gateway.NewNoopIdentifyRateLimiter(),
			OnMessage:       func(m Message) { got <- m },
		})
		return gw, got
	}
	next := func(got chan Message, want snowflake.ID, replayed bool) {
		t.Helper()
		select {
		case m := <-got:
			if m.MessageID != want || m.Replayed != replayed {
				t.Fatalf("got message %d (replayed %v), want %d (replayed %v)", m.MessageID, m.Replayed, want, replayed)
			}
		case <-ctx.Done():
			t.Fatalf("message %d never arrived", want)
		}
	}

	a, aGot := holder()
	defer a.Close(ctx)
	if _, ok := a.Session(0); ok {
		t.Fatal("a shard not opened has a session")
	}
	if err := a.OpenShard(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	first := post()
	next(aGot, first, false)
	cp, ok := a.Session(0)
	live, _ := dc.Session(0)
	if !ok || cp.SessionID != live.ID || cp.Sequence < 1 || cp.ResumeURL == "" {
		t.Fatalf("checkpoint %+v, %v; Discord's session %+v", cp, ok, live)
	}
	// Handed on after the checkpoint, then the holder is gone, its
	// session left (a crash, as Discord sees it).
	second := post()
	next(aGot, second, false)
	a.Drop(0)
	a.CloseShard(ctx, 0, true)
	third := post()

	b, bGot := holder()
	defer b.Close(ctx)
	if err := b.OpenShard(ctx, 0, &cp); err != nil {
		t.Fatal(err)
	}
	next(bGot, second, true)
	next(bGot, third, true)
	if dc.Identifies(0) != 1 {
		t.Errorf("%d identifies, want 1: the next holder resumes", dc.Identifies(0))
	}
	fourth := post()
	next(bGot, fourth, false)
	if s, ok := b.Session(0); !ok || s.SessionID != cp.SessionID || s.Sequence <= cp.Sequence {
		t.Errorf("b's checkpoint %+v, %v, want the session resumed, past %d", s, ok, cp.Sequence)
	}

	// Past its lease (Serving false), the holder hands nothing on.
	var serving atomic.Bool
	b.mu.Lock()
	b.cfg.Serving = func(int) bool { return serving.Load() }
	b.mu.Unlock()
	post()
	sent, _ := dc.Session(0)
	for {
		if last := b.sm.Shard(0).LastSequenceReceived(); last != nil && *last >= sent.Seq {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the message never reached the holder: %v", ctx.Err())
		case <-time.After(10 * time.Millisecond): // disgo reads the connection on its own goroutine
		}
	}
	select {
	case m := <-bGot:
		t.Fatalf("a holder past its lease handed on message %d", m.MessageID)
	default:
	}
	serving.Store(true)
	last := post()
	next(bGot, last, false)
}
