package discordtest_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/gorilla/websocket"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// rawGateway is a bare websocket client speaking the gateway protocol, for
// tests of the stand-in alone.
type rawGateway struct {
	t  *testing.T
	ws *websocket.Conn
}

// frame is a gateway payload as received.
type frame struct {
	Op int             `json:"op"`
	S  int             `json:"s"`
	T  string          `json:"t"`
	D  json.RawMessage `json:"d"`
}

// dialGateway connects to a gateway URL with the query disgo sends.
func dialGateway(t *testing.T, url string) *rawGateway {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url+"?v=10&encoding=json", nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return &rawGateway{t: t, ws: ws}
}

// read returns the next payload; the read deadline guards against a hung
// test, it is not a wait.
func (g *rawGateway) read() (frame, error) {
	_ = g.ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	var f frame
	_, data, err := g.ws.ReadMessage()
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(data, &f); err != nil {
		g.t.Fatalf("undecodable payload %s: %v", data, err)
	}
	return f, nil
}

func (g *rawGateway) mustRead() frame {
	g.t.Helper()
	f, err := g.read()
	if err != nil {
		g.t.Fatalf("read: %v", err)
	}
	return f
}

func (g *rawGateway) send(op int, d any) {
	g.t.Helper()
	if err := g.ws.WriteJSON(map[string]any{"op": op, "d": d}); err != nil {
		g.t.Fatalf("send op %d: %v", op, err)
	}
}

func (g *rawGateway) identify(token string, shard, count int, intents gateway.Intents) {
	g.t.Helper()
	g.send(2, map[string]any{
		"token":      token,
		"properties": map[string]string{"os": "linux", "browser": "test", "device": "test"},
		"shard":      []int{shard, count},
		"intents":    intents,
	})
}

// expectClose reads until the connection closes and checks the code.
func (g *rawGateway) expectClose(code int) {
	g.t.Helper()
	for {
		f, err := g.read()
		if err == nil {
			if f.Op == 0 || f.Op == 10 || f.Op == 11 {
				continue
			}
			g.t.Fatalf("got op %d while waiting for close %d", f.Op, code)
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != code {
			g.t.Fatalf("connection ended with %v, want close code %d", err, code)
		}
		return
	}
}

// connectShard dials, reads HELLO, identifies and reads READY and the
// GUILD_CREATEs of the shard's guilds.
func connectShard(t *testing.T, s *discordtest.Server, shard, count, guilds int) (*rawGateway, frame) {
	t.Helper()
	g := dialGateway(t, s.GatewayURL())
	if f := g.mustRead(); f.Op != 10 {
		t.Fatalf("first payload op %d, want HELLO", f.Op)
	}
	g.identify(s.Token(), shard, count, gateway.IntentGuilds)
	ready := g.mustRead()
	if ready.T != "READY" {
		t.Fatalf("got %s, want READY", ready.T)
	}
	for range guilds {
		if f := g.mustRead(); f.T != "GUILD_CREATE" {
			t.Fatalf("got %s, want GUILD_CREATE", f.T)
		}
	}
	return g, ready
}

func TestGatewayHandshake(t *testing.T) {
	t.Parallel()
	s := newServer(t, discordtest.WithHeartbeatInterval(5*time.Second), discordtest.WithApplicationFlags(discord.ApplicationFlagGatewayGuildMembers))
	w0 := addWorld(t, s, 0, 2, 1)
	addWorld(t, s, 1, 2, 2)
	w2 := addWorld(t, s, 0, 2, 3)

	g := dialGateway(t, s.GatewayURL())
	hello := g.mustRead()
	var hd struct {
		HeartbeatInterval int `json:"heartbeat_interval"`
	}
	if err := json.Unmarshal(hello.D, &hd); err != nil || hello.Op != 10 || hd.HeartbeatInterval != 5000 {
		t.Fatalf("HELLO = %+v, want op 10 with heartbeat_interval 5000", hello)
	}
	g.send(1, nil)
	if f := g.mustRead(); f.Op != 11 {
		t.Fatalf("heartbeat answered with op %d, want 11", f.Op)
	}

	g.identify(s.Token(), 0, 2, gateway.IntentGuilds|gateway.IntentGuildMembers)
	ready := g.mustRead()
	var re gateway.EventReady
	if err := json.Unmarshal(ready.D, &re); err != nil {
		t.Fatalf("READY does not decode into disgo's type: %v", err)
	}
	if ready.S != 1 || re.User.ID != s.BotUserID() || !re.User.Bot || re.Application.ID != s.ApplicationID() ||
		re.Shard != [2]int{0, 2} || re.ResumeGatewayURL != s.ResumeGatewayURL() || re.SessionID == "" || re.Version != 10 {
		t.Errorf("READY = %+v (s=%d)", re, ready.S)
	}
	if len(re.Guilds) != 2 || re.Guilds[0].ID != w0.guild.ID || re.Guilds[1].ID != w2.guild.ID || !re.Guilds[0].Unavailable {
		t.Errorf("READY guilds = %+v, want the 2 guilds of shard 0, unavailable", re.Guilds)
	}
	for i, want := range []world{w0, w2} {
		f := g.mustRead()
		var gc gateway.EventGuildCreate
		if err := json.Unmarshal(f.D, &gc); err != nil {
			t.Fatalf("GUILD_CREATE does not decode into disgo's type: %v", err)
		}
		if f.T != "GUILD_CREATE" || f.S != i+2 || gc.ID != want.guild.ID || len(gc.Channels) != 1 ||
			len(gc.Roles) != 1 || len(gc.Members) != 2 {
			t.Errorf("GUILD_CREATE %d = %s s=%d guild %d, %d channels, %d roles, %d members",
				i, f.T, f.S, gc.ID, len(gc.Channels), len(gc.Roles), len(gc.Members))
		}
	}
	sess, ok := s.Session(0)
	if !ok || sess.ID != re.SessionID || !sess.Connected || sess.Seq != 3 {
		t.Errorf("Session(0) = %+v, %v", sess, ok)
	}
}

func TestGatewayRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		flags discord.ApplicationFlags
		query string
		steps func(g *rawGateway, token string)
		code  int
	}{
		{"bad token", discordtest.DefaultApplicationFlags, "", func(g *rawGateway, _ string) {
			g.identify("Mzk.nope", 0, 1, gateway.IntentGuilds)
		}, 4004},
		{"shard out of range", discordtest.DefaultApplicationFlags, "", func(g *rawGateway, token string) {
			g.identify(token, 2, 2, gateway.IntentGuilds)
		}, 4010},
		{"unknown intent", discordtest.DefaultApplicationFlags, "", func(g *rawGateway, token string) {
			g.identify(token, 0, 1, 1<<40)
		}, 4013},
		{"privileged intent not enabled", 0, "", func(g *rawGateway, token string) {
			g.identify(token, 0, 1, gateway.IntentGuilds|gateway.IntentMessageContent)
		}, 4014},
		{"command before identify", discordtest.DefaultApplicationFlags, "", func(g *rawGateway, _ string) {
			g.send(3, map[string]any{"status": "online"})
		}, 4003},
		{"identify twice", discordtest.DefaultApplicationFlags, "", func(g *rawGateway, token string) {
			g.identify(token, 0, 1, 0)
			g.identify(token, 0, 1, 0)
		}, 4005},
		{"unknown opcode", discordtest.DefaultApplicationFlags, "", func(g *rawGateway, token string) {
			g.identify(token, 0, 1, 0)
			g.send(99, nil)
		}, 4001},
		{"not JSON", discordtest.DefaultApplicationFlags, "", func(g *rawGateway, _ string) {
			_ = g.ws.WriteMessage(websocket.TextMessage, []byte("{op:"))
		}, 4002},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, discordtest.WithApplicationFlags(tc.flags))
			g := dialGateway(t, s.GatewayURL())
			g.mustRead()
			tc.steps(g, s.Token())
			g.expectClose(tc.code)
		})
	}

	t.Run("old API version", func(t *testing.T) {
		t.Parallel()
		s := newServer(t)
		ws, _, err := websocket.DefaultDialer.Dial(s.GatewayURL()+"?v=9&encoding=json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		(&rawGateway{t: t, ws: ws}).expectClose(4012)
	})
}

func TestGatewayResumeReplaysMissedEvents(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	g, ready := connectShard(t, s, 0, 1, 1)
	var re gateway.EventReady
	if err := json.Unmarshal(ready.D, &re); err != nil {
		t.Fatal(err)
	}

	// The network drops; an interaction happens meanwhile.
	if err := s.Disconnect(0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := g.read(); err == nil {
		t.Fatal("connection still open after Disconnect")
	}
	in, err := s.Interact(discordtest.Invocation{ChannelID: w.channel.ID, UserID: w.user.UserID, Data: discordtest.ChatInput{Name: "ping"}})
	if err != nil {
		t.Fatalf("Interact while the shard is away: %v", err)
	}

	r := dialGateway(t, re.ResumeGatewayURL)
	r.mustRead()
	r.send(6, map[string]any{"token": s.Token(), "session_id": re.SessionID, "seq": 2})
	replayed := r.mustRead()
	var ic gateway.EventInteractionCreate
	if err := json.Unmarshal(replayed.D, &ic); err != nil {
		t.Fatalf("INTERACTION_CREATE does not decode into disgo's type: %v", err)
	}
	if replayed.T != "INTERACTION_CREATE" || replayed.S != 3 || ic.ID() != in.ID || ic.Token() != in.Token {
		t.Errorf("replayed %s s=%d id %d, want the interaction at s=3", replayed.T, replayed.S, ic.ID())
	}
	if f := r.mustRead(); f.T != "RESUMED" || f.S != 4 {
		t.Errorf("got %s s=%d, want RESUMED s=4", f.T, f.S)
	}
	if got := s.Resumes(0); got != 1 {
		t.Errorf("Resumes(0) = %d, want 1", got)
	}

	// A forced RECONNECT keeps the session; an unresumable INVALID_SESSION
	// ends it, and resuming it is refused with INVALID_SESSION false.
	if err := s.Reconnect(0); err != nil {
		t.Fatal(err)
	}
	if f := r.mustRead(); f.Op != 7 {
		t.Errorf("got op %d, want RECONNECT", f.Op)
	}
	r2 := dialGateway(t, re.ResumeGatewayURL)
	r2.mustRead()
	r2.send(6, map[string]any{"token": s.Token(), "session_id": re.SessionID, "seq": 4})
	if f := r2.mustRead(); f.T != "RESUMED" {
		t.Fatalf("got %s, want RESUMED", f.T)
	}
	if err := s.InvalidateSession(0, false); err != nil {
		t.Fatal(err)
	}
	if f := r2.mustRead(); f.Op != 9 || string(f.D) != "false" {
		t.Errorf("got op %d d=%s, want INVALID_SESSION false", f.Op, f.D)
	}
	r3 := dialGateway(t, s.GatewayURL())
	r3.mustRead()
	r3.send(6, map[string]any{"token": s.Token(), "session_id": re.SessionID, "seq": 5})
	if f := r3.mustRead(); f.Op != 9 || string(f.D) != "false" {
		t.Errorf("resume of an invalid session: op %d d=%s, want INVALID_SESSION false", f.Op, f.D)
	}
	if _, err := s.Interact(discordtest.Invocation{ChannelID: w.channel.ID, UserID: w.user.UserID, Data: discordtest.ChatInput{Name: "ping"}}); !errors.Is(err, discordtest.ErrNoSession) {
		t.Errorf("Interact without a session: %v, want ErrNoSession", err)
	}
}

func TestGatewayDisconnectWithCode(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for i, code := range []int{4000, 4009} {
		g, _ := connectShard(t, s, 0, 1, 0)
		if err := s.Disconnect(0, code); err != nil {
			t.Fatal(err)
		}
		g.expectClose(code)
		sess, _ := s.Session(0)
		if sess.Invalid != (code == 4009) {
			t.Errorf("step %d: after close %d session invalid = %v", i, code, sess.Invalid)
		}
	}
	if err := s.Disconnect(0, 4000); !errors.Is(err, discordtest.ErrNoSession) {
		t.Errorf("Disconnect of an invalid session: %v, want ErrNoSession", err)
	}
}

func TestGatewayLiveEvents(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	g := dialGateway(t, s.GatewayURL())
	g.mustRead()
	g.identify(s.Token(), 0, 1, gateway.IntentGuilds|gateway.IntentGuildMessages)
	g.mustRead()

	gd, err := s.AddGuild(discordtest.Guild{Name: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if f := g.mustRead(); f.T != "GUILD_CREATE" {
		t.Fatalf("got %s, want GUILD_CREATE for the new guild", f.T)
	}
	ch, err := s.AddChannel(discordtest.Channel{GuildID: gd.ID})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.AddMessage(discordtest.Message{ChannelID: ch.ID, Content: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	f := g.mustRead()
	var mc gateway.EventMessageCreate
	if err := json.Unmarshal(f.D, &mc); err != nil {
		t.Fatal(err)
	}
	// No MESSAGE_CONTENT intent: the content is withheld.
	if f.T != "MESSAGE_CREATE" || mc.ID != m.ID || mc.Content != "" || mc.GuildID == nil || *mc.GuildID != gd.ID {
		t.Errorf("got %s %+v, want MESSAGE_CREATE without content", f.T, mc.Message)
	}
	if err := s.DeleteMessage(m.ID); err != nil {
		t.Fatal(err)
	}
	var md gateway.EventMessageDelete
	if f := g.mustRead(); f.T != "MESSAGE_DELETE" || json.Unmarshal(f.D, &md) != nil || md.ID != m.ID {
		t.Errorf("got %s %s, want MESSAGE_DELETE of %d", f.T, f.D, m.ID)
	}
	if got := strconv.Itoa(len(s.Sessions())); got != "1" {
		t.Errorf("%s sessions, want 1", got)
	}
}
