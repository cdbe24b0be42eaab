package discordtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

func TestPermissions(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	g, _ := s.AddGuild(discordtest.Guild{OwnerID: 1000})
	mustRole := func(r discordtest.Role) discordtest.Role {
		t.Helper()
		r.GuildID = g.ID
		out, err := s.AddRole(r)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	viewers := mustRole(discordtest.Role{Name: "viewers"})
	admins := mustRole(discordtest.Role{Name: "admins", Permissions: discord.PermissionAdministrator})
	for _, m := range []discordtest.Member{
		{UserID: 1000},
		{UserID: 1001},
		{UserID: 1002, Roles: []snowflake.ID{viewers.ID}},
		{UserID: 1003, Roles: []snowflake.ID{viewers.ID}},
		{UserID: 1004, Roles: []snowflake.ID{admins.ID}},
	} {
		m.GuildID = g.ID
		if _, err := s.AddMember(m); err != nil {
			t.Fatal(err)
		}
	}
	open, _ := s.AddChannel(discordtest.Channel{GuildID: g.ID})
	private, _ := s.AddChannel(discordtest.Channel{GuildID: g.ID, Overwrites: []discordtest.Overwrite{
		discordtest.RoleOverwrite(g.ID, 0, discord.PermissionViewChannel),
		discordtest.RoleOverwrite(viewers.ID, discord.PermissionViewChannel, 0),
		discordtest.MemberOverwrite(1003, 0, discord.PermissionViewChannel),
	}})
	thread, err := s.AddChannel(discordtest.Channel{GuildID: g.ID, Type: discord.ChannelTypeGuildPublicThread, ParentID: private.ID})
	if err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		channel snowflake.ID
		user    snowflake.ID
		view    bool
		all     bool
	}{
		{open.ID, 1001, true, false},     // 0: @everyone sees open channels
		{private.ID, 1001, false, false}, // 1: @everyone is denied
		{private.ID, 1002, true, false},  // 2: a role overwrite allows
		{private.ID, 1003, false, false}, // 3: a member overwrite beats the role
		{private.ID, 1004, true, true},   // 4: administrators see everything
		{private.ID, 1000, true, true},   // 5: so does the owner
		{thread.ID, 1002, true, false},   // 6: threads follow their parent
		{thread.ID, 1001, false, false},  // 7
	}
	for i, st := range steps {
		p, err := s.Permissions(st.channel, st.user)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := p.Has(discord.PermissionViewChannel); got != st.view {
			t.Errorf("step %d: VIEW_CHANNEL = %v want %v (perms %d)", i, got, st.view, p)
		}
		if got := p == discord.PermissionsAll; got != st.all {
			t.Errorf("step %d: all permissions = %v want %v", i, got, st.all)
		}
		if !st.view && p != 0 {
			t.Errorf("step %d: no VIEW_CHANNEL but permissions %d", i, p)
		}
	}
	if _, err := s.Permissions(open.ID, 4242); !errors.Is(err, discordtest.ErrUnknownMember) {
		t.Errorf("Permissions of a stranger: %v, want ErrUnknownMember", err)
	}
}

func TestRESTModel(t *testing.T) {
	t.Parallel()
	s := newServer(t, discordtest.WithShardCount(3), discordtest.WithMaxConcurrency(16))
	w := addWorld(t, s, 0, 1, 1)
	readOnly, _ := s.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Overwrites: []discordtest.Overwrite{
		discordtest.RoleOverwrite(w.guild.ID, 0, discord.PermissionSendMessages),
	}})
	noHistory, _ := s.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Overwrites: []discordtest.Overwrite{
		discordtest.RoleOverwrite(w.guild.ID, 0, discord.PermissionReadMessageHistory),
	}})
	gid, cid, uid := w.guild.ID.String(), w.channel.ID.String(), w.user.UserID.String()

	steps := []struct {
		method string
		path   string
		body   any
		auth   bool
		status int
		code   int
		into   any
	}{
		{"GET", "/gateway", nil, false, 200, 0, &discord.Gateway{}},
		{"GET", "/gateway/bot", nil, true, 200, 0, &discord.GatewayBot{}},
		{"GET", "/gateway/bot", nil, false, 401, 0, nil},
		{"GET", "/users/@me", nil, true, 200, 0, &discord.OAuth2User{}},
		{"GET", "/users/" + uid, nil, true, 200, 0, &discord.User{}},
		{"GET", "/users/77", nil, true, 404, 10013, nil},
		{"GET", "/oauth2/applications/@me", nil, true, 200, 0, &discord.Application{}},
		{"GET", "/guilds/" + gid, nil, true, 200, 0, &discord.RestGuild{}},
		{"GET", "/guilds/77", nil, true, 404, 10004, nil},
		{"GET", "/guilds/" + gid + "/channels", nil, true, 200, 0, &[]discord.UnmarshalChannel{}},
		{"GET", "/guilds/" + gid + "/roles", nil, true, 200, 0, &[]discord.Role{}},
		{"GET", "/guilds/" + gid + "/members/" + uid, nil, true, 200, 0, &discord.Member{}},
		{"GET", "/guilds/" + gid + "/members/77", nil, true, 404, 10007, nil},
		{"GET", "/channels/" + cid, nil, true, 200, 0, &discord.UnmarshalChannel{}},
		{"GET", "/channels/77", nil, true, 404, 10003, nil},
		{"GET", "/channels/" + cid + "/messages/" + w.message.ID.String(), nil, true, 200, 0, &discord.Message{}},
		{"GET", "/channels/" + noHistory.ID.String() + "/messages/1", nil, true, 403, 50001, nil},
		{"POST", "/channels/" + cid + "/messages", map[string]any{"content": "hi"}, true, 200, 0, &discord.Message{}},
		{"POST", "/channels/" + cid + "/messages", map[string]any{"content": ""}, true, 400, 50006, nil},
		{"POST", "/channels/" + readOnly.ID.String() + "/messages", map[string]any{"content": "hi"}, true, 403, 50013, nil},
		{"DELETE", "/gateway/bot", nil, true, 405, 0, nil},
		{"GET", "/nowhere", nil, true, 404, 0, nil},
	}
	for i, st := range steps {
		r := call(t, s, st.method, st.path, st.body, st.auth)
		if r.status != st.status || r.code != st.code {
			t.Errorf("step %d: %s %s = %d/%d, want %d/%d (%s)", i, st.method, st.path, r.status, r.code, st.status, st.code, r.body)
			continue
		}
		if st.into != nil {
			if err := json.Unmarshal(r.body, st.into); err != nil {
				t.Errorf("step %d: %s %s does not decode into %T: %v\n%s", i, st.method, st.path, st.into, err, r.body)
			}
		}
	}

	var gb discord.GatewayBot
	_ = json.Unmarshal(call(t, s, "GET", "/gateway/bot", nil, true).body, &gb)
	if gb.URL != s.GatewayURL() || gb.Shards != 3 || gb.SessionStartLimit.MaxConcurrency != 16 {
		t.Errorf("/gateway/bot = %+v", gb)
	}
	if got := s.Messages(w.channel.ID); len(got) != 2 || got[1].Content != "hi" || got[1].AuthorID != s.BotUserID() {
		t.Errorf("channel messages = %+v, want the world's message and the bot's hi", got)
	}
}

func TestRESTMessageContentNeedsTheIntent(t *testing.T) {
	t.Parallel()
	s := newServer(t, discordtest.WithApplicationFlags(0))
	w := addWorld(t, s, 0, 1, 1)
	mention, err := s.AddMessage(discordtest.Message{ChannelID: w.channel.ID, AuthorID: w.user.UserID, Content: "hey bot", Mentions: []snowflake.ID{s.BotUserID()}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(id snowflake.ID) discord.Message {
		t.Helper()
		r := call(t, s, "GET", "/channels/"+w.channel.ID.String()+"/messages/"+id.String(), nil, true)
		var m discord.Message
		if err := json.Unmarshal(r.body, &m); err != nil || r.status != 200 {
			t.Fatalf("GET message: %d %s", r.status, r.body)
		}
		return m
	}
	if m := get(w.message.ID); m.Content != "" || len(m.Attachments) != 0 {
		t.Errorf("without the intent: content %q, %d attachments; want none", m.Content, len(m.Attachments))
	}
	if m := get(mention.ID); m.Content != "hey bot" {
		t.Errorf("a message mentioning the bot reads %q", m.Content)
	}
}

func TestRESTRateLimitHeadersAndFaults(t *testing.T) {
	t.Parallel()
	s := newServer(t, discordtest.WithRateLimit(5, 2*time.Second))

	r := call(t, s, "GET", "/users/@me", nil, true)
	h := r.header
	if h.Get("X-RateLimit-Limit") != "5" || h.Get("X-RateLimit-Remaining") != "4" || h.Get("X-RateLimit-Reset-After") != "2.000" ||
		h.Get("X-RateLimit-Bucket") == "" || h.Get("X-RateLimit-Reset") == "" || h.Get("Via") == "" {
		t.Errorf("rate limit headers = %v", h)
	}
	if r2 := call(t, s, "GET", "/users/@me", nil, true); r2.header.Get("X-RateLimit-Remaining") != "3" ||
		r2.header.Get("X-RateLimit-Bucket") != h.Get("X-RateLimit-Bucket") {
		t.Errorf("second request headers = %v", r2.header)
	}

	mustInject := func(route string, n int, f discordtest.Fault) {
		t.Helper()
		if err := s.Inject(route, n, f); err != nil {
			t.Fatal(err)
		}
	}
	mustInject(discordtest.RouteGetCurrentUser, 2, discordtest.Fault{Status: 429, RetryAfter: 50 * time.Millisecond})
	mustInject("GET /users/**", 1, discordtest.Fault{Status: 429, RetryAfter: 1500 * time.Millisecond, Global: true})
	mustInject("*", 1, discordtest.Fault{Status: 403})
	mustInject(discordtest.RouteGetCurrentUser, 1, discordtest.Fault{Status: 502})

	type rateLimited struct {
		Message    string  `json:"message"`
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
	}
	steps := []struct {
		status     int
		code       int
		retryAfter string
		scope      string
		body       rateLimited
	}{
		{429, 0, "1", "user", rateLimited{"You are being rate limited.", 0.05, false}},
		{429, 0, "1", "user", rateLimited{"You are being rate limited.", 0.05, false}},
		{429, 0, "2", "global", rateLimited{"You are being rate limited.", 1.5, true}},
		{403, 50001, "", "", rateLimited{}},
		{502, 0, "", "", rateLimited{}},
		{200, 0, "", "", rateLimited{}},
	}
	for i, st := range steps {
		r := call(t, s, "GET", "/users/@me", nil, true)
		if r.status != st.status || r.code != st.code || r.header.Get("Retry-After") != st.retryAfter ||
			r.header.Get("X-RateLimit-Scope") != st.scope {
			t.Errorf("step %d: %d/%d Retry-After %q scope %q, want %d/%d %q %q", i, r.status, r.code,
				r.header.Get("Retry-After"), r.header.Get("X-RateLimit-Scope"), st.status, st.code, st.retryAfter, st.scope)
		}
		if st.status == 429 {
			var body rateLimited
			if err := json.Unmarshal(r.body, &body); err != nil || body != st.body {
				t.Errorf("step %d: body %s, want %+v", i, r.body, st.body)
			}
			if (r.header.Get("X-RateLimit-Global") != "") != st.body.Global {
				t.Errorf("step %d: X-RateLimit-Global = %q", i, r.header.Get("X-RateLimit-Global"))
			}
		}
	}
	injected := 0
	for _, rq := range s.Requests() {
		if rq.Injected {
			injected++
		}
	}
	if injected != 5 {
		t.Errorf("%d injected answers recorded, want 5", injected)
	}
	if err := s.Inject("users/@me", 1, discordtest.Fault{}); !errors.Is(err, discordtest.ErrInvalid) {
		t.Errorf("Inject of a malformed route: %v, want ErrInvalid", err)
	}
}

func TestRESTHeldRequests(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	connectShard(t, s, 0, 1, 1)
	in, err := s.Interact(discordtest.Invocation{ChannelID: w.channel.ID, UserID: w.user.UserID, Data: discordtest.ChatInput{Name: "pin"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)

	// The callback takes effect at once, but its answer is held: what a
	// client sees as a timeout it may retry, acknowledging twice.
	release := make(chan struct{})
	if err := s.Inject(discordtest.RouteInteractionCallback, 1, discordtest.Fault{Hold: release, AfterHandling: true}); err != nil {
		t.Fatal(err)
	}
	answered := make(chan int, 1)
	go func() {
		rq, _ := http.NewRequest("POST", s.APIURL()+callbackPath(in), jsonBody(map[string]any{"type": 5}))
		rq.Header.Set("Content-Type", "application/json")
		rs, err := http.DefaultClient.Do(rq)
		if err != nil {
			answered <- 0
			return
		}
		rs.Body.Close()
		answered <- rs.StatusCode
	}()
	first, err := in.WaitResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !first.OK() {
		t.Fatalf("held callback = %+v, want accepted", first)
	}
	if r := call(t, s, "POST", callbackPath(in), map[string]any{"type": 5}, false); r.status != 400 || r.code != 40060 {
		t.Errorf("retry of a held callback: %d/%d, want 400/40060", r.status, r.code)
	}
	close(release)
	if st := <-answered; st != 204 {
		t.Errorf("held callback finally answered %d, want 204", st)
	}

	// A request held forever ends when the server closes.
	if err := s.Inject(discordtest.RouteGetChannel, 1, discordtest.Fault{Hold: make(chan struct{})}); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		status int
		err    error
	}
	failed := make(chan outcome, 1)
	go func() {
		rq, _ := http.NewRequestWithContext(ctx, "GET", s.APIURL()+"/channels/"+w.channel.ID.String(), nil)
		rq.Header.Set("Authorization", "Bot "+s.Token())
		rs, err := http.DefaultClient.Do(rq)
		if err != nil {
			failed <- outcome{err: err}
			return
		}
		rs.Body.Close()
		failed <- outcome{status: rs.StatusCode}
	}()
	held, err := s.WaitRequests(ctx, discordtest.RouteGetChannel, 1)
	if err != nil {
		t.Fatal(err)
	}
	if held[0].Status != 0 {
		t.Errorf("held request has status %d, want 0 (not answered)", held[0].Status)
	}
	s.Close()
	// The connection is dropped; net/http may retry the GET on a new one,
	// which the closing server answers 503.
	if o := <-failed; o.err == nil && o.status != http.StatusServiceUnavailable {
		t.Errorf("a request held across Close got a %d answer", o.status)
	}
	if _, err := s.WaitRequests(context.Background(), discordtest.RouteAny, 100); !errors.Is(err, discordtest.ErrClosed) {
		t.Errorf("WaitRequests on a closed server: %v, want ErrClosed", err)
	}
}

// jsonBody encodes v as a request body.
func jsonBody(v any) io.Reader {
	data, _ := json.Marshal(v)
	return bytes.NewReader(data)
}
