package fastjson

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/disgo/rest"
	djson "github.com/disgoorg/json/v2"
	"github.com/disgoorg/snowflake/v2"
	"github.com/gorilla/websocket"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// The tests swap the package-level decoder back and forth. Nothing in this
// package runs concurrently with them (no t.Parallel, no background
// goroutine decodes), which is what keeps that race-free.

// with runs fn with disgo decoding through unmarshal, then restores
// encoding/json.
func with(unmarshal func([]byte, any) error, fn func()) {
	djson.Unmarshal = unmarshal
	defer func() { djson.Unmarshal = json.Unmarshal }()
	fn()
}

// decodeBoth decodes data into a new T with encoding/json and with
// Unmarshal. stdPanic is what encoding/json panicked with, if it did:
// disgo's own UnmarshalJSON methods panic on some malformed input.
func decodeBoth[T any](data []byte) (std, fast T, stdErr, fastErr error, stdPanic any) {
	func() {
		defer func() { stdPanic = recover() }()
		with(json.Unmarshal, func() { stdErr = djson.Unmarshal(data, &std) })
	}()
	with(Unmarshal, func() { fastErr = djson.Unmarshal(data, &fast) })
	return std, fast, stdErr, fastErr, stdPanic
}

// checkSame fails unless go-json decodes data into T exactly as
// encoding/json does.
func checkSame[T any](t *testing.T, what string, data []byte) T {
	t.Helper()
	std, fast, stdErr, fastErr, stdPanic := decodeBoth[T](data)
	if stdPanic != nil {
		t.Fatalf("%s: encoding/json panicked: %v\n%s", what, stdPanic, data)
	}
	if stdErr != nil {
		t.Fatalf("%s: encoding/json: %v\n%s", what, stdErr, data)
	}
	if fastErr != nil {
		t.Fatalf("%s: go-json fails where encoding/json decodes: %v\n%s", what, fastErr, data)
	}
	if !reflect.DeepEqual(std, fast) {
		t.Fatalf("%s: decoders disagree at %s\ninput: %s", what, diff(std, fast), data)
	}
	return fast
}

func TestInstall(t *testing.T) {
	defer func() { djson.Unmarshal = json.Unmarshal }()
	Install()
	if reflect.ValueOf(djson.Unmarshal).Pointer() != reflect.ValueOf(Unmarshal).Pointer() {
		t.Fatal("Install did not route disgo's decoding through go-json")
	}
}

// world is a stand-in with a guild, a channel, a member, an image message
// and the bot's commands synced.
type world struct {
	dc      *discordtest.Server
	rest    rest.Rest
	guild   discordtest.Guild
	channel discordtest.Channel
	member  discordtest.Member
	msg     discordtest.Message
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dc := discordtest.NewServer()
	t.Cleanup(dc.Close)
	w := &world{dc: dc, rest: rest.New(rest.NewClient(dc.Token(), rest.WithURL(dc.APIURL())))}
	t.Cleanup(func() { w.rest.Close(context.Background()) })
	var err error
	if w.guild, err = dc.AddGuild(discordtest.Guild{Name: "Guild ✓ \"quoted\""}); err != nil {
		t.Fatal(err)
	}
	if _, err = dc.AddRole(discordtest.Role{GuildID: w.guild.ID, Name: "mods", Permissions: discord.PermissionManageGuild, Color: 0x336699}); err != nil {
		t.Fatal(err)
	}
	if w.channel, err = dc.AddChannel(discordtest.Channel{GuildID: w.guild.ID}); err != nil {
		t.Fatal(err)
	}
	if w.member, err = dc.AddMember(discordtest.Member{GuildID: w.guild.ID, Nick: "nick \u00e9\U0001F600", GlobalName: "Global"}); err != nil {
		t.Fatal(err)
	}
	w.msg, err = dc.AddMessage(discordtest.Message{
		ChannelID: w.channel.ID,
		Content:   "look <@123> https://example.com/cat.png \\ \"x\"",
		Attachments: []discordtest.Attachment{
			{Filename: "a.png", ContentType: "image/png", Width: 640, Height: 480},
			{Filename: "b.gif", Width: 1, Height: 1},
		},
		Embeds: []discord.Embed{{
			Type:      discord.EmbedTypeImage,
			URL:       "https://example.com/cat.png",
			Thumbnail: &discord.EmbedResource{URL: "https://example.com/cat.png", Width: 10, Height: 20},
		}},
		Mentions: []snowflake.ID{w.member.UserID},
		EditedAt: time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// connect opens a gateway session with the given intents and returns the
// connection and the HELLO frame; the READY frame is the next to read.
func (w *world) connect(t *testing.T, intents gateway.Intents) (*websocket.Conn, []byte) {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(w.dc.GatewayURL()+"?v=10&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, hello, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("gateway read: %v", err)
	}
	if err := ws.WriteJSON(map[string]any{"op": gateway.OpcodeIdentify, "d": map[string]any{
		"token":      w.dc.Token(),
		"properties": map[string]string{"os": "linux", "browser": "test", "device": "test"},
		"intents":    intents,
	}}); err != nil {
		t.Fatal(err)
	}
	return ws, hello
}

// TestDecodersAgreeOnGateway: every frame the stand-in's gateway sends
// (HELLO, READY, GUILD_CREATE and INTERACTION_CREATE of each kind the bot
// handles) decodes to the same gateway.Message with both decoders.
func TestDecodersAgreeOnGateway(t *testing.T) {
	w := newWorld(t)
	ws, hello := w.connect(t, gateway.IntentGuilds)
	read := func() []byte {
		t.Helper()
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("gateway read: %v", err)
		}
		return data
	}
	seen := map[string]int{}
	check := func(data []byte) gateway.Message {
		t.Helper()
		m := checkSame[gateway.Message](t, "gateway frame", data)
		seen[fmt.Sprintf("%d/%s", m.Op, m.T)]++
		return m
	}
	check(hello)
	check(read()) // READY
	check(read()) // GUILD_CREATE

	invocations := []discordtest.InvocationData{
		discordtest.ChatInput{Name: "pin", Options: []discordtest.CommandOption{
			{Name: "messages", Value: w.msg.ID.String()},
			{Name: "count", Value: 3},
			{Name: "private", Value: true},
			{Name: "ratio", Value: 0.5},
			{Name: "file", Value: discordtest.Attachment{Filename: "c.jpg", ContentType: "image/jpeg", Width: 2, Height: 3}},
			{Name: "who", Type: discord.ApplicationCommandOptionTypeUser, Value: w.member.UserID},
			{Name: "where", Type: discord.ApplicationCommandOptionTypeChannel, Value: w.channel.ID},
		}},
		discordtest.MessageCommand{Name: "Pin to Pinterest", TargetID: w.msg.ID},
		discordtest.Autocomplete{Name: "unlink", Options: []discordtest.CommandOption{{Name: "account", Value: "ab"}}},
		discordtest.SelectMenu{CustomID: "board/1", Values: []string{"b1", "b2"}, MessageID: w.msg.ID},
		discordtest.Button{CustomID: "switch", MessageID: w.msg.ID},
	}
	for _, d := range invocations {
		if _, err := w.dc.Interact(discordtest.Invocation{ChannelID: w.channel.ID, UserID: w.member.UserID, Locale: discord.LocaleFrench, Data: d}); err != nil {
			t.Fatalf("%T: %v", d, err)
		}
		m := check(read())
		if m.T != gateway.EventTypeInteractionCreate {
			t.Fatalf("%T: got %s, want INTERACTION_CREATE", d, m.T)
		}
	}
	if seen["0/INTERACTION_CREATE"] != len(invocations) || seen["0/READY"] != 1 || seen["0/GUILD_CREATE"] != 1 {
		t.Fatalf("frames seen: %v", seen)
	}
}

// recorder keeps the body of the last response the REST client received.
type recorder struct {
	last []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	rs, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(rs.Body)
	rs.Body.Close()
	if err != nil {
		return nil, err
	}
	r.last = body
	rs.Body = io.NopCloser(bytes.NewReader(body))
	return rs, nil
}

// TestDecodersAgreeOnREST: the response of every REST call the bot makes,
// errors included, decodes the same with both decoders.
func TestDecodersAgreeOnREST(t *testing.T) {
	w := newWorld(t)
	rec := &recorder{}
	w.rest = rest.New(rest.NewClient(w.dc.Token(), rest.WithURL(w.dc.APIURL()), rest.WithHTTPClient(&http.Client{Transport: rec})))
	ws, _ := w.connect(t, 0)
	if _, _, err := ws.ReadMessage(); err != nil { // READY
		t.Fatal(err)
	}
	in, err := w.dc.Interact(discordtest.Invocation{ChannelID: w.channel.ID, UserID: w.member.UserID,
		Data: discordtest.ChatInput{Name: "pin"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.rest.CreateInteractionResponse(in.ID, in.Token, discord.InteractionResponse{
		Type: discord.InteractionResponseTypeDeferredCreateMessage,
		Data: discord.MessageCreate{Flags: discord.MessageFlagEphemeral},
	}); err != nil {
		t.Fatal(err)
	}
	app := w.dc.ApplicationID()
	calls := []struct {
		name string
		call func() (any, error)
		// as is the type disgo decodes the body into, when it is not the
		// type of the result (interfaces are decoded through a wrapper).
		as reflect.Type
	}{
		{name: "GetGatewayBot", call: func() (any, error) { return w.rest.GetGatewayBot() }},
		{name: "SetGlobalCommands", call: func() (any, error) {
			return w.rest.SetGlobalCommands(app, []discord.ApplicationCommandCreate{
				discord.SlashCommandCreate{Name: "pin", Description: "Pin images", Options: []discord.ApplicationCommandOption{
					discord.ApplicationCommandOptionString{Name: "messages", Description: "links", Required: true, Autocomplete: true},
					discord.ApplicationCommandOptionInt{Name: "count", Description: "n", MinValue: new(1), MaxValue: new(10)},
				}},
				discord.MessageCommandCreate{Name: "Pin to Pinterest"},
			})
		}, as: reflect.TypeFor[[]discord.UnmarshalApplicationCommand]()},
		{name: "GetMessage", call: func() (any, error) { return w.rest.GetMessage(w.channel.ID, w.msg.ID) }},
		{name: "GetChannel", call: func() (any, error) { return w.rest.GetChannel(w.channel.ID) }},
		{name: "GetGuild", call: func() (any, error) { return w.rest.GetGuild(w.guild.ID, false) }},
		{name: "GetRoles", call: func() (any, error) { return w.rest.GetRoles(w.guild.ID) }},
		{name: "GetMember", call: func() (any, error) { return w.rest.GetMember(w.guild.ID, w.member.UserID) }},
		{name: "UpdateInteractionResponse", call: func() (any, error) {
			return w.rest.UpdateInteractionResponse(app, in.Token, discord.MessageUpdate{Content: new("Pinned 1 of 1.")})
		}},
		{name: "CreateFollowupMessage", call: func() (any, error) {
			return w.rest.CreateFollowupMessage(app, in.Token, discord.MessageCreate{Content: "again", Flags: discord.MessageFlagEphemeral})
		}},
	}
	for _, c := range calls {
		rec.last = nil
		var res any
		var err error
		with(json.Unmarshal, func() { res, err = c.call() })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// Decode the same body again with each decoder, into the type
		// disgo decodes it into.
		typ := c.as
		if typ == nil {
			typ = reflect.TypeOf(res)
		}
		std, fast := reflect.New(typ), reflect.New(typ)
		var serr, ferr error
		with(json.Unmarshal, func() { serr = djson.Unmarshal(rec.last, std.Interface()) })
		with(Unmarshal, func() { ferr = djson.Unmarshal(rec.last, fast.Interface()) })
		if serr != nil || ferr != nil {
			t.Fatalf("%s: encoding/json: %v, go-json: %v\n%s", c.name, serr, ferr, rec.last)
		}
		if reflect.ValueOf(std.Elem().Interface()).IsZero() {
			t.Fatalf("%s: the recorded body %q decodes to nothing", c.name, rec.last)
		}
		if !reflect.DeepEqual(std.Elem().Interface(), fast.Elem().Interface()) {
			t.Fatalf("%s: decoders disagree at %s\nbody: %s", c.name, diff(std.Elem().Interface(), fast.Elem().Interface()), rec.last)
		}
	}

	for _, c := range []struct {
		name string
		call func() error
	}{
		{"GetMessage unknown", func() error { _, err := w.rest.GetMessage(w.channel.ID, 1); return err }},
		{"GetChannel unknown", func() error { _, err := w.rest.GetChannel(2); return err }},
		{"CreateFollowupMessage invalid", func() error {
			_, err := w.rest.CreateFollowupMessage(app, in.Token, discord.MessageCreate{})
			return err
		}},
	} {
		if err := c.call(); err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		e := checkSame[rest.Error](t, c.name, rec.last)
		if e.Code == 0 || e.Message == "" {
			t.Fatalf("%s: body %s decodes to %+v, want a Discord error", c.name, rec.last, e)
		}
	}
}

// Payloads written after Discord's documentation, with fields the stand-in
// does not send: member permissions, app permissions, entitlements,
// contexts, nested sub-command options, a thread channel, a partial member
// with avatar decoration, nulls where Discord sends them.
var docPayloads = []string{
	`{"op":10,"d":{"heartbeat_interval":41250},"s":null,"t":null}`,
	`{"op":11,"d":null,"s":null,"t":null}`,
	`{"op":7,"d":null,"s":null,"t":null}`,
	`{"op":9,"d":false,"s":null,"t":null}`,
	`{"op":0,"s":42,"t":"RESUMED","d":{}}`,
	`{"op":0,"s":7,"t":"INTERACTION_CREATE","d":{"version":1,"type":2,"token":"aW50ZXJhY3Rpb246dG9rZW4=","member":{"user":{"username":"pat","public_flags":0,"id":"53908232506183680","global_name":"Pat","discriminator":"0","avatar_decoration_data":{"asset":"a_1","sku_id":"1"},"avatar":"a_d5efa99b3eeaa7dd43acca82f5692432"},"roles":["539082325061836999"],"premium_since":null,"permissions":"2147483647","pending":false,"nick":null,"mute":false,"joined_at":"2017-03-13T19:19:14.040000+00:00","is_pending":false,"flags":0,"deaf":false,"communication_disabled_until":null,"banner":null,"avatar":null},"id":"786008729715212338","guild_locale":"en-US","guild_id":"290926798626357999","guild":{"locale":"en-US","id":"290926798626357999","features":["COMMUNITY","NEWS"]},"entitlements":[],"authorizing_integration_owners":{"0":"290926798626357999"},"context":0,"data":{"type":1,"name":"settings","id":"771825006014889984","options":[{"type":1,"name":"board","options":[{"value":"b-1","type":3,"name":"board","focused":false}]}]},"channel_id":"645027906669510667","channel":{"type":11,"id":"645027906669510667","guild_id":"290926798626357999","parent_id":"645027906669510600","name":"a thread","flags":0,"permissions":"1024","thread_metadata":{"archived":false,"auto_archive_duration":1440,"archive_timestamp":"2024-05-01T00:00:00+00:00","locked":false}},"attachment_size_limit":26214400,"application_id":"775799577604522054","app_permissions":"442368","locale":"fr"}}`,
	`{"op":0,"s":8,"t":"INTERACTION_CREATE","d":{"version":1,"type":2,"token":"t","user":{"id":"53908232506183680","username":"pat","discriminator":"0","global_name":null,"avatar":null,"bot":false},"id":"786008729715212339","context":1,"authorizing_integration_owners":{"1":"53908232506183680"},"data":{"type":3,"name":"Pin to Pinterest","id":"771825006014889985","target_id":"1100000000000000000","resolved":{"messages":{"1100000000000000000":{"type":0,"tts":false,"timestamp":"2024-04-30T12:00:00.123000+00:00","pinned":false,"mentions":[],"mention_roles":[],"mention_everyone":false,"id":"1100000000000000000","flags":0,"embeds":[{"type":"rich","title":"t","image":{"url":"https://cdn.example/x.png","proxy_url":"https://media.example/x.png","width":100,"height":50,"content_type":"image/png","placeholder":"abc","placeholder_version":1,"flags":0},"fields":[{"name":"a","value":"b","inline":true}],"color":16711680,"timestamp":"2024-04-30T12:00:00.000Z"}],"edited_timestamp":null,"content":"","components":[{"type":1,"components":[{"type":2,"style":5,"label":"Open","url":"https://example.com"}]}],"channel_id":"645027906669510667","author":{"username":"sam","id":"80351110224678912","discriminator":"0","avatar":null},"attachments":[{"width":1280,"url":"https://cdn.discordapp.com/attachments/1/2/x.png?ex=1&is=2&hm=3&","size":123456,"proxy_url":"https://media.discordapp.net/attachments/1/2/x.png","id":"1100000000000000001","height":720,"filename":"x.png","content_type":"image/png","placeholder":"3PcNDQJ4","placeholder_version":1,"flags":0}]}}}},"channel_id":"645027906669510667","application_id":"775799577604522054","app_permissions":"442368","locale":"en-GB","entitlements":[{"id":"1","sku_id":"2","application_id":"775799577604522054","user_id":"53908232506183680","type":8,"deleted":false,"starts_at":null,"ends_at":null,"consumed":false}]}}`,
	`{"op":0,"s":9,"t":"INTERACTION_CREATE","d":{"version":1,"type":3,"token":"t","message":{"type":20,"id":"1200000000000000000","channel_id":"645027906669510667","author":{"id":"775799577604522054","username":"pinbot","bot":true,"discriminator":"0"},"content":"Pick a board","timestamp":"2024-04-30T12:00:00+00:00","edited_timestamp":"2024-04-30T12:01:00+00:00","flags":64,"embeds":[],"attachments":[],"mentions":[],"mention_roles":[],"pinned":false,"mention_everyone":false,"tts":false,"components":[{"type":1,"components":[{"type":3,"custom_id":"board/1","options":[{"label":"A","value":"a","default":true},{"label":"B","value":"b","description":"d","emoji":{"name":"📌","id":null}}],"min_values":1,"max_values":1,"placeholder":"Board"}]}],"interaction_metadata":{"id":"786008729715212338","type":2,"user":{"id":"53908232506183680","username":"pat","discriminator":"0"},"authorizing_integration_owners":{"0":"290926798626357999"}}},"member":{"user":{"id":"53908232506183680","username":"pat","discriminator":"0"},"roles":[],"joined_at":"2017-03-13T19:19:14.040000+00:00","deaf":false,"mute":false,"flags":0,"permissions":"8"},"id":"786008729715212340","guild_id":"290926798626357999","data":{"values":["b"],"custom_id":"board/1","component_type":3},"channel_id":"645027906669510667","application_id":"775799577604522054","app_permissions":"442368","locale":"en-US","context":0}}`,
	`{"op":0,"s":10,"t":"INTERACTION_CREATE","d":{"version":1,"type":4,"token":"t","member":{"user":{"id":"53908232506183680","username":"pat","discriminator":"0"},"roles":[],"joined_at":"2017-03-13T19:19:14.040000+00:00","permissions":"8"},"id":"786008729715212341","guild_id":"290926798626357999","data":{"type":1,"name":"unlink","id":"771825006014889986","options":[{"value":"pa","type":3,"name":"account","focused":true},{"value":7,"type":4,"name":"n"},{"value":1.5,"type":10,"name":"f"},{"value":true,"type":5,"name":"b"}]},"channel_id":"645027906669510667","application_id":"775799577604522054","locale":"en-US"}}`,
}

func TestDecodersAgreeOnDocumentedPayloads(t *testing.T) {
	for i, p := range docPayloads {
		checkSame[gateway.Message](t, fmt.Sprintf("payload %d", i), []byte(p))
	}
}

// TestUnmarshalTurnsPanicsIntoErrors: input on which disgo's own decoding
// panics (found by FuzzDecodersAgree) is an error through Unmarshal.
func TestUnmarshalTurnsPanicsIntoErrors(t *testing.T) {
	data := []byte(`{"op":0,"t":"INTERACTION_CREATE","d":{"type":3,"message":{"components":[{"type":1,"components":[{"type":1}]}]}}}`)
	_, _, _, fastErr, stdPanic := decodeBoth[gateway.Message](data)
	if stdPanic == nil {
		t.Fatal("encoding/json no longer panics in disgo on this input; the test needs another one")
	}
	if fastErr == nil || !strings.Contains(fastErr.Error(), "panicked") {
		t.Fatalf("Unmarshal = %v, want the panic as an error", fastErr)
	}
}

// FuzzDecodersAgree: on any input, Unmarshal does not panic, and whatever
// encoding/json decodes as a gateway message, Unmarshal decodes to the
// same value. (go-json may accept some input encoding/json rejects; Discord
// does not send such input.)
func FuzzDecodersAgree(f *testing.F) {
	for _, p := range docPayloads {
		f.Add([]byte(p))
	}
	f.Add([]byte(`{"op":0,"t":"INTERACTION_CREATE","d":null}`))
	f.Add([]byte(`{"op":0,"t":"INTERACTION_CREATE","d":{"type":99}}`))
	f.Add([]byte(`{"op":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		std, fast, stdErr, _, stdPanic := decodeBoth[gateway.Message](data)
		if stdPanic == nil && stdErr == nil && !reflect.DeepEqual(std, fast) {
			t.Fatalf("decoders disagree at %s\ninput: %q", diff(std, fast), data)
		}
	})
}

// diff names the first place where a and b differ, for failure messages.
func diff(a, b any) string {
	return diffValue(reflect.ValueOf(a), reflect.ValueOf(b), "")
}

func diffValue(a, b reflect.Value, path string) string {
	if a.IsValid() != b.IsValid() {
		return fmt.Sprintf("%s: one side is missing", path)
	}
	if !a.IsValid() {
		return ""
	}
	if a.Type() != b.Type() {
		return fmt.Sprintf("%s: type %v vs %v", path, a.Type(), b.Type())
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return fmt.Sprintf("%s: nil vs not nil", path)
			}
			return ""
		}
		return diffValue(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if d := diffValue(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
		return ""
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil slice vs empty slice (%d vs %d elements)", path, a.Len(), b.Len())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d vs %d elements", path, a.Len(), b.Len())
		}
		for i := range a.Len() {
			if d := diffValue(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case reflect.Map:
		if a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: nil map vs empty map (%d vs %d entries)", path, a.Len(), b.Len())
		}
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d vs %d entries", path, a.Len(), b.Len())
		}
		for _, k := range a.MapKeys() {
			if d := diffValue(a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k)); d != "" {
				return d
			}
		}
		return ""
	default:
		if a.CanInterface() && b.CanInterface() {
			if !reflect.DeepEqual(a.Interface(), b.Interface()) {
				return fmt.Sprintf("%s: %v vs %v", path, a.Interface(), b.Interface())
			}
			return ""
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			return fmt.Sprintf("%s: %v vs %v", path, a, b)
		}
		return ""
	}
}

// BenchmarkDecodeInteraction decodes the INTERACTION_CREATE of a
// context-menu command on a message (docPayloads[6]) as disgo's gateway
// does, with each decoder.
func BenchmarkDecodeInteraction(b *testing.B) {
	data := []byte(docPayloads[6])
	for _, d := range []struct {
		name      string
		unmarshal func([]byte, any) error
	}{{"encoding-json", json.Unmarshal}, {"go-json", Unmarshal}} {
		b.Run(d.name, func(b *testing.B) {
			with(d.unmarshal, func() {
				b.ReportAllocs()
				for b.Loop() {
					var m gateway.Message
					if err := djson.Unmarshal(data, &m); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
