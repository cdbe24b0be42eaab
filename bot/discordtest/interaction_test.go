package discordtest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// httpResult is a decoded REST answer.
type httpResult struct {
	status int
	header http.Header
	body   []byte
	code   int
}

// call sends a REST request to s with the bot token when auth is set.
func call(t *testing.T, s *discordtest.Server, method, path string, body any, auth bool) httpResult {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	rq, err := http.NewRequest(method, s.APIURL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		rq.Header.Set("Content-Type", "application/json")
	}
	if auth {
		rq.Header.Set("Authorization", "Bot "+s.Token())
	}
	rs, err := http.DefaultClient.Do(rq)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer rs.Body.Close()
	data, err := io.ReadAll(rs.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := httpResult{status: rs.StatusCode, header: rs.Header, body: data}
	if rs.StatusCode >= 400 {
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(data, &e)
		out.code = e.Code
	}
	return out
}

func callbackPath(in *discordtest.Interaction) string {
	return "/interactions/" + in.ID.String() + "/" + in.Token + "/callback"
}

func webhookPath(s *discordtest.Server, in *discordtest.Interaction) string {
	return "/webhooks/" + s.ApplicationID().String() + "/" + in.Token
}

// readInteraction reads the INTERACTION_CREATE of in from g and decodes it
// with disgo.
func readInteraction(t *testing.T, g *rawGateway, in *discordtest.Interaction) discord.Interaction {
	t.Helper()
	f := g.mustRead()
	if f.T != "INTERACTION_CREATE" {
		t.Fatalf("got %s, want INTERACTION_CREATE", f.T)
	}
	var ev gateway.EventInteractionCreate
	if err := json.Unmarshal(f.D, &ev); err != nil {
		t.Fatalf("disgo cannot decode the interaction: %v\n%s", err, f.D)
	}
	if ev.ID() != in.ID {
		t.Fatalf("got interaction %d, want %d", ev.ID(), in.ID)
	}
	return ev.Interaction
}

func TestInteractionCallbackRules(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := discordtest.NewManualClock(t0)
	s := newServer(t, discordtest.WithClock(clock.Now))
	w := addWorld(t, s, 0, 1, 1)
	connectShard(t, s, 0, 1, 1)
	interact := func() *discordtest.Interaction {
		t.Helper()
		in, err := s.Interact(discordtest.Invocation{ChannelID: w.channel.ID, UserID: w.user.UserID, Data: discordtest.ChatInput{Name: "pin"}})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	deferred := map[string]any{"type": 5}
	reply := map[string]any{"type": 4, "data": map[string]any{"content": "pinned"}}
	edit := map[string]any{"content": "done"}

	a := interact()
	if !a.CreatedAt.Equal(t0) || !a.ID.Time().Equal(t0) {
		t.Errorf("interaction created at %v, id time %v; want %v", a.CreatedAt, a.ID.Time(), t0)
	}
	b := interact()
	c := interact()

	steps := []struct {
		advance time.Duration
		method  string
		path    string
		body    any
		status  int
		code    int
	}{
		// 0: a deferral within the deadline is accepted.
		{time.Second, "POST", callbackPath(a), deferred, 204, 0},
		// 1: a second initial response is refused.
		{0, "POST", callbackPath(a), reply, 400, 40060},
		// 2: the deferred message is edited.
		{0, "PATCH", webhookPath(s, a) + "/messages/@original", edit, 200, 0},
		// 3: b has no response yet, so no webhook.
		{0, "PATCH", webhookPath(s, b) + "/messages/@original", edit, 404, 10015},
		// 4: b answered exactly at the deadline still counts (t0+3s).
		{2 * time.Second, "POST", callbackPath(b), reply, 204, 0},
		// 5: c answered a millisecond late has expired.
		{time.Millisecond, "POST", callbackPath(c), deferred, 404, 10062},
		// 6: and c never gets a webhook.
		{0, "POST", webhookPath(s, c), edit, 404, 10015},
		// 7: an unknown token is no interaction at all.
		{0, "POST", "/interactions/" + a.ID.String() + "/nope/callback", deferred, 404, 10062},
		// 8: after 15 minutes a's token is dead.
		{discordtest.InteractionTokenLifetime, "PATCH", webhookPath(s, a) + "/messages/@original", edit, 401, 50027},
	}
	for i, st := range steps {
		clock.Advance(st.advance)
		r := call(t, s, st.method, st.path, st.body, false)
		if r.status != st.status || r.code != st.code {
			t.Errorf("step %d: %s %s = %d/%d, want %d/%d (%s)", i, st.method, st.path, r.status, r.code, st.status, st.code, r.body)
		}
	}

	if got, ok := s.FirstResponseLatency(a.ID); !ok || got != time.Second {
		t.Errorf("FirstResponseLatency(a) = %v, %v; want 1s", got, ok)
	}
	if got, ok := b.FirstResponseLatency(); !ok || got != discordtest.InteractionDeadline {
		t.Errorf("FirstResponseLatency(b) = %v, %v; want 3s", got, ok)
	}
	if _, ok := c.FirstResponseLatency(); ok {
		t.Error("c counts as acknowledged")
	}
	if got := s.DuplicateAcks(); got != 1 {
		t.Errorf("DuplicateAcks() = %d, want 1", got)
	}
	rs := a.Responses()
	wantKinds := []discordtest.ResponseKind{discordtest.KindCallback, discordtest.KindCallback, discordtest.KindEditOriginal, discordtest.KindEditOriginal}
	if len(rs) != len(wantKinds) {
		t.Fatalf("a has %d responses, want %d: %+v", len(rs), len(wantKinds), rs)
	}
	for i, k := range wantKinds {
		if rs[i].Kind != k {
			t.Errorf("a response %d is %v, want %v", i, rs[i].Kind, k)
		}
	}
	if rs[0].Type != discord.InteractionResponseTypeDeferredCreateMessage || !rs[0].At.Equal(t0.Add(time.Second)) ||
		rs[1].Code != 40060 || rs[2].Data.Content != "done" || !rs[2].OK() || rs[3].Status != 401 {
		t.Errorf("a responses = %+v", rs)
	}
	if m, ok := a.Original(); !ok || m.Content != "done" || m.Flags.Has(discord.MessageFlagLoading) || !m.EditedAt.IsZero() {
		t.Errorf("a original = %+v, want done, not loading, not marked edited", m)
	}
}

func TestInteractionPayloadDecodesInDisgo(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	mods, err := s.AddRole(discordtest.Role{GuildID: w.guild.ID, Name: "mods", Permissions: discord.PermissionManageMessages})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMember(discordtest.Member{GuildID: w.guild.ID, UserID: w.user.UserID, Username: "alice", Roles: []snowflake.ID{mods.ID}}); err != nil {
		t.Fatal(err)
	}
	// @everyone may not send messages in the channel.
	ch, err := s.AddChannel(discordtest.Channel{
		ID: w.channel.ID, GuildID: w.guild.ID, Name: "general",
		Overwrites: []discordtest.Overwrite{discordtest.RoleOverwrite(w.guild.ID, 0, discord.PermissionSendMessages)},
	})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := connectShard(t, s, 0, 1, 1)

	in, err := s.Interact(discordtest.Invocation{
		ChannelID: ch.ID,
		UserID:    w.user.UserID,
		Locale:    discord.LocaleGerman,
		Data: discordtest.ChatInput{Name: "pin", Options: []discordtest.CommandOption{
			{Name: "link", Value: "https://discord.com/channels/1/2/3"},
			{Name: "count", Value: 3},
			{Name: "nsfw", Value: false},
			{Name: "who", Type: discord.ApplicationCommandOptionTypeUser, Value: w.user.UserID},
			{Name: "where", Type: discord.ApplicationCommandOptionTypeChannel, Value: ch.ID},
			{Name: "image", Value: discordtest.Attachment{Filename: "dog.jpg", ContentType: "image/jpeg", Width: 10, Height: 20}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	i := readInteraction(t, g, in)
	ac, ok := i.(discord.ApplicationCommandInteraction)
	if !ok {
		t.Fatalf("got %T, want an application command", i)
	}
	data := ac.SlashCommandInteractionData()
	if data.CommandName() != "pin" || data.String("link") != "https://discord.com/channels/1/2/3" || data.Int("count") != 3 ||
		data.Bool("nsfw") || data.User("who").ID != w.user.UserID || data.Channel("where").ID != ch.ID {
		t.Errorf("options decoded as %+v", data.Options)
	}
	att := data.Attachment("image")
	if att.Filename != "dog.jpg" || att.ContentType == nil || *att.ContentType != "image/jpeg" || att.URL == "" || !att.Ephemeral {
		t.Errorf("attachment option = %+v", att)
	}
	userPerms, _ := s.Permissions(ch.ID, w.user.UserID)
	botPerms, _ := s.Permissions(ch.ID, s.BotUserID())
	if ac.Member() == nil || ac.Member().Permissions != userPerms || ac.AppPermissions() == nil || *ac.AppPermissions() != botPerms {
		t.Errorf("permissions: member %v app %v, want %v and %v", ac.Member().Permissions, ac.AppPermissions(), userPerms, botPerms)
	}
	if userPerms.Has(discord.PermissionSendMessages) || !userPerms.Has(discord.PermissionManageMessages|discord.PermissionViewChannel) {
		t.Errorf("user permissions %v: want view and manage messages, not send", userPerms)
	}
	if ac.GuildID() == nil || *ac.GuildID() != w.guild.ID || ac.Channel().ID() != ch.ID || ac.Locale() != discord.LocaleGerman ||
		ac.Token() != in.Token || ac.ApplicationID() != s.ApplicationID() || ac.User().ID != w.user.UserID {
		t.Errorf("interaction envelope: guild %v channel %d locale %s", ac.GuildID(), ac.Channel().ID(), ac.Locale())
	}
}

func TestInteractionMessageCommandsAndComponents(t *testing.T) {
	t.Parallel()
	// No message content intent: the resolved target still has content.
	s := newServer(t, discordtest.WithApplicationFlags(0))
	w := addWorld(t, s, 0, 1, 1)
	g, _ := connectShard(t, s, 0, 1, 1)

	mc, err := s.Interact(discordtest.Invocation{UserID: w.user.UserID, Data: discordtest.MessageCommand{Name: "Pin to Pinterest", TargetID: w.message.ID}})
	if err != nil {
		t.Fatal(err)
	}
	target := readInteraction(t, g, mc).(discord.ApplicationCommandInteraction).MessageCommandInteractionData().TargetMessage()
	if target.Content != "look at this" || len(target.Attachments) != 1 || target.Attachments[0].Width == nil {
		t.Errorf("resolved target = %+v", target)
	}

	menu := []map[string]any{{"type": 1, "components": []map[string]any{{
		"type": 3, "custom_id": "/board", "options": []map[string]any{{"label": "Cats", "value": "cats"}},
	}}}}
	r := call(t, s, "POST", callbackPath(mc), map[string]any{"type": 4, "data": map[string]any{"content": "Pick a board", "components": menu, "flags": 64}}, false)
	if r.status != 204 {
		t.Fatalf("callback: %d %s", r.status, r.body)
	}
	orig, ok := mc.Original()
	if !ok || !orig.Flags.Has(discord.MessageFlagEphemeral) || orig.Type != discord.MessageTypeContextMenuCommand {
		t.Fatalf("original = %+v, %v", orig, ok)
	}

	sel, err := s.Interact(discordtest.Invocation{UserID: w.user.UserID, Data: discordtest.SelectMenu{CustomID: "/board", Values: []string{"cats"}, MessageID: orig.ID}})
	if err != nil {
		t.Fatal(err)
	}
	ci := readInteraction(t, g, sel).(discord.ComponentInteraction)
	if ci.Message.ID != orig.ID || ci.Data.CustomID() != "/board" || len(ci.Message.Components) != 1 {
		t.Errorf("component interaction on message %d custom id %q", ci.Message.ID, ci.Data.CustomID())
	}
	if v := ci.Data.(discord.StringSelectMenuInteractionData).Values; len(v) != 1 || v[0] != "cats" {
		t.Errorf("values = %v", v)
	}
	r = call(t, s, "POST", callbackPath(sel), map[string]any{"type": 7, "data": map[string]any{"content": "Pinned to cats", "components": []any{}}}, false)
	if r.status != 204 {
		t.Fatalf("update callback: %d %s", r.status, r.body)
	}
	if m, _ := s.Message(orig.ID); m.Content != "Pinned to cats" || m.EditedAt.IsZero() {
		t.Errorf("after update the message is %+v", m)
	}

	btn, err := s.Interact(discordtest.Invocation{UserID: w.user.UserID, Data: discordtest.Button{CustomID: "/undo", MessageID: orig.ID}})
	if err != nil {
		t.Fatal(err)
	}
	readInteraction(t, g, btn)
	if r := call(t, s, "POST", callbackPath(btn), map[string]any{"type": 6}, false); r.status != 204 {
		t.Fatalf("deferred update: %d %s", r.status, r.body)
	}
	if r := call(t, s, "PATCH", webhookPath(s, btn)+"/messages/@original", map[string]any{"content": "Undone"}, false); r.status != 200 {
		t.Fatalf("edit after deferred update: %d %s", r.status, r.body)
	}
	if m, _ := s.Message(orig.ID); m.Content != "Undone" {
		t.Errorf("the component's message reads %q, want Undone", m.Content)
	}

	ac, err := s.Interact(discordtest.Invocation{ChannelID: w.channel.ID, UserID: w.user.UserID, Data: discordtest.Autocomplete{
		Name: "pin", Options: []discordtest.CommandOption{{Name: "link", Value: "x"}, {Name: "board", Value: "ca", Focused: true}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ai := readInteraction(t, g, ac).(discord.AutocompleteInteraction)
	if f := ai.Data.Focused(); f.Name != "board" || ai.Data.String("board") != "ca" {
		t.Errorf("focused option = %+v", f)
	}
	if r := call(t, s, "POST", callbackPath(ac), map[string]any{"type": 4, "data": map[string]any{"content": "no"}}, false); r.status != 400 || r.code != 50035 {
		t.Errorf("message response to autocomplete: %d/%d, want 400/50035", r.status, r.code)
	}
	choices := map[string]any{"type": 8, "data": map[string]any{"choices": []map[string]any{{"name": "Cats", "value": "cats"}}}}
	if r := call(t, s, "POST", callbackPath(ac), choices, false); r.status != 204 {
		t.Fatalf("autocomplete result: %d %s", r.status, r.body)
	}
	rs := ac.Responses()
	if len(rs) != 2 || len(rs[1].Choices) != 1 || rs[1].Choices[0].Value != "cats" {
		t.Errorf("autocomplete responses = %+v", rs)
	}
}

func TestInteractionFollowups(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	w := addWorld(t, s, 0, 1, 1)
	connectShard(t, s, 0, 1, 1)
	in, err := s.Interact(discordtest.Invocation{ChannelID: w.channel.ID, UserID: w.user.UserID, Data: discordtest.ChatInput{Name: "pin"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := call(t, s, "POST", webhookPath(s, in), map[string]any{"content": "early"}, false); r.status != 404 || r.code != 10015 {
		t.Errorf("followup before the callback: %d/%d, want 404/10015", r.status, r.code)
	}
	if r := call(t, s, "POST", callbackPath(in), map[string]any{"type": 5, "data": map[string]any{"flags": 64}}, false); r.status != 204 {
		t.Fatalf("deferral: %d %s", r.status, r.body)
	}
	orig, _ := in.Original()
	if !orig.Flags.Has(discord.MessageFlagLoading) || !orig.Flags.Has(discord.MessageFlagEphemeral) {
		t.Errorf("deferred original flags = %v, want loading and ephemeral", orig.Flags)
	}

	// The first followup after a deferral completes the loading message.
	first := call(t, s, "POST", webhookPath(s, in), map[string]any{"content": "1"}, false)
	var m1 discord.Message
	if err := json.Unmarshal(first.body, &m1); err != nil || first.status != 200 || m1.ID != orig.ID || m1.Content != "1" ||
		m1.Flags.Has(discord.MessageFlagLoading) || m1.InteractionMetadata == nil || m1.InteractionMetadata.ID != in.ID {
		t.Errorf("first followup: %d %+v", first.status, m1)
	}
	second := call(t, s, "POST", webhookPath(s, in), map[string]any{"content": "2"}, false)
	var m2 discord.Message
	if err := json.Unmarshal(second.body, &m2); err != nil || m2.ID == orig.ID || m2.Content != "2" {
		t.Fatalf("second followup: %d %s", second.status, second.body)
	}
	msgPath := webhookPath(s, in) + "/messages/" + m2.ID.String()
	steps := []struct {
		method string
		path   string
		body   any
		status int
		code   int
	}{
		{"PATCH", msgPath, map[string]any{"content": "2b"}, 200, 0},
		{"GET", msgPath, nil, 200, 0},
		{"PATCH", msgPath, map[string]any{"content": ""}, 400, 50006},
		{"DELETE", msgPath, nil, 204, 0},
		{"GET", msgPath, nil, 404, 10008},
		{"GET", webhookPath(s, in) + "/messages/@original", nil, 200, 0},
		// Ephemeral messages cannot be fetched through the channel.
		{"GET", "/channels/" + w.channel.ID.String() + "/messages/" + orig.ID.String(), nil, 404, 10008},
		{"DELETE", webhookPath(s, in) + "/messages/@original", nil, 204, 0},
		{"PATCH", webhookPath(s, in) + "/messages/@original", map[string]any{"content": "gone"}, 404, 10008},
	}
	for i, st := range steps {
		r := call(t, s, st.method, st.path, st.body, true)
		if r.status != st.status || r.code != st.code {
			t.Errorf("step %d: %s %s = %d/%d, want %d/%d (%s)", i, st.method, st.path, r.status, r.code, st.status, st.code, r.body)
		}
	}
	kinds := map[discordtest.ResponseKind]int{}
	for _, r := range in.Responses() {
		kinds[r.Kind]++
	}
	want := map[discordtest.ResponseKind]int{
		discordtest.KindFollowup: 3, discordtest.KindCallback: 1, discordtest.KindEditFollowup: 2,
		discordtest.KindDeleteFollowup: 1, discordtest.KindDeleteOriginal: 1, discordtest.KindEditOriginal: 1,
	}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %v responses, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
}
