package sandbox

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

var t0 = time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)

func TestRenderMarkdown(t *testing.T) {
	t.Parallel()
	in12h := t0.Add(12*time.Hour - time.Minute).Unix()
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"**Your Pinterest accounts**", "Your Pinterest accounts"},
		{`@alice\_pins`, "@alice_pins"},
		{`a\*b\\c`, `a*b\c`},
		{"`Nope` is not", "Nope is not"},
		{"\\`kept\\`", "`kept`"},
		{"see <https://discord.com/channels/1/2/3> now", "see https://discord.com/channels/1/2/3 now"},
		{"frees <t:" + itoa(in12h) + ":R>.", "frees in 11h 59m."},
		{"was <t:" + itoa(t0.Add(-3*time.Minute).Unix()) + ":R>", "was 3m ago"},
		{"1 < 2 > 0", "1 < 2 > 0"},
		{"<t:nope:R>", "<t:nope:R>"},
		{"<not a link>", "<not a link>"},
		{"__under__", "under"},
		{"snake_case_url", "snake_case_url"},
		{"ends with <", "ends with <"},
	}
	for i, tt := range tests {
		if got := renderMarkdown(tt.in, t0); got != tt.want {
			t.Errorf("step %d: renderMarkdown(%q) = %q want %q", i, tt.in, got, tt.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestRenderTimestamps writes out a timestamp of every style Discord
// defines as a reader two hours east of UTC reads it, on a fixed clock:
// the time of day and the date are the reader's, not UTC's.
func TestRenderTimestamps(t *testing.T) {
	t.Parallel()
	reader := time.FixedZone("UTC+2", 2*60*60)
	now := t0.In(reader)                                                 // Monday 2 June 2025, 11:00 for the reader
	at := itoa(t0.Add(time.Hour + 2*time.Minute + 3*time.Second).Unix()) // 12:02:03 for the reader
	late := itoa(time.Date(2025, 6, 2, 22, 30, 0, 0, time.UTC).Unix())   // 00:30 on 3 June for the reader
	tests := []struct{ in, want string }{
		{"<t:" + at + ":t>", "12:02"},
		{"<t:" + at + ":T>", "12:02:03"},
		{"<t:" + at + ":d>", "2025-06-02"},
		{"<t:" + at + ":D>", "2 June 2025"},
		{"<t:" + at + ":f>", "2 June 2025 12:02"},
		{"<t:" + at + ">", "2 June 2025 12:02"},
		{"<t:" + at + ":F>", "Monday, 2 June 2025 12:02"},
		{"<t:" + at + ":R>", "in 1h 2m"},
		{"starts <t:" + at + ":T> (<t:" + at + ":R>)", "starts 12:02:03 (in 1h 2m)"},
		{"<t:" + late + ":T>", "00:30:00"},
		{"<t:" + late + ":F>", "Tuesday, 3 June 2025 00:30"},
		{"<t:" + late + ":d>", "2025-06-03"},
		// Styles Discord does not define, and no number: plain text.
		{"<t:" + at + ":x>", "<t:" + at + ":x>"},
		{"<t:" + at + ":>", "<t:" + at + ":>"},
		{"<t:" + at + ":TT>", "<t:" + at + ":TT>"},
		{"<t::T>", "<t::T>"},
	}
	for i, tt := range tests {
		if got := renderMarkdown(tt.in, now); got != tt.want {
			t.Errorf("step %d: renderMarkdown(%q) = %q want %q", i, tt.in, got, tt.want)
		}
	}
}

// TestRenderMentions shows mentions by name, as Discord does, and those
// of users, roles or channels the demo world does not hold as Discord
// shows them.
func TestRenderMentions(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"queued by <@12>", "queued by @bob"},
		{"<@!11>", "@alice"},
		{"<@99>", "@unknown-user"},
		{"in <#200>", "in #art"},
		{"<#1>", "#unknown"},
		{"<@&901>", "@mods"},
		{"<@&1>", "@deleted-role"},
		{"<@bob>", "<@bob>"},
		{"<#!200>", "<#!200>"},
		{"<@>", "<@>"},
	}
	for i, tt := range tests {
		if got := renderMarkdown(tt.in, t0); got != tt.want {
			t.Errorf("step %d: renderMarkdown(%q) = %q want %q", i, tt.in, got, tt.want)
		}
	}
}

func TestRelative(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "now"},
		{500 * time.Millisecond, "now"},
		{42 * time.Second, "in 42s"},
		{24*time.Second + 400*time.Millisecond, "in 25s"}, // up to the second, as the cancel menu
		{-42 * time.Second, "42s ago"},
		{5 * time.Minute, "in 5m"},
		{12*time.Hour - 12*time.Second, "in 11h 59m"},
		{12 * time.Hour, "in 12h"},
		{90*time.Minute + 30*time.Second, "in 1h 30m"},
		{3 * 24 * time.Hour, "in 72h"},
	}
	for i, tt := range tests {
		if got := relative(t0.Add(tt.d), t0); got != tt.want {
			t.Errorf("step %d: relative(t0%+v, t0) = %q want %q", i, tt.d, got, tt.want)
		}
	}
}

func TestParseAndRenderComponents(t *testing.T) {
	t.Parallel()
	raw := json.RawMessage(`[
		{"type":1,"components":[{"type":3,"custom_id":"/settings/switch","placeholder":"Switch the active account",
			"options":[{"label":"@alice\\_pins","value":"7001","description":"12-hour pins: 3/100","default":true},
			           {"label":"@alice\\_art","value":"7002","description":"12-hour pins: 0/100"}]}]},
		{"type":1,"components":[{"type":3,"custom_id":"/settings/board/7001","placeholder":"Default board for alice_pins",
			"options":[{"label":"Cats","value":"70011","default":true},{"label":"Travel","value":"70012"}]}]},
		{"type":1,"components":[{"type":2,"style":5,"label":"Connect Pinterest","url":"http://127.0.0.1:1/oauth/?state=x"}]}
	]`)
	cs, err := parseComponents(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 || cs[0].CustomID != switchMenuID || len(cs[0].Options) != 2 || cs[2].URL == "" {
		t.Fatalf("parseComponents = %+v", cs)
	}
	got := renderComponents(cs)
	want := `[menu "Switch the active account"] — pick with /switch ACCOUNT
  * @alice\_pins — 12-hour pins: 3/100
    @alice\_art — 12-hour pins: 0/100
[menu "Default board for alice_pins"] — pick with /board BOARD
  * Cats
    Travel
[button "Connect Pinterest"] http://127.0.0.1:1/oauth/?state=x`
	if got != want {
		t.Errorf("renderComponents =\n%s\nwant\n%s", got, want)
	}
	for _, tt := range []struct {
		arg, want string
		ok        bool
	}{
		{"alice_art", "7002", true},
		{"@Alice_Art", "7002", true},
		{"7001", "7001", true},
		{"bob", "", false},
	} {
		if v, ok := matchOption(cs[0].Options, tt.arg); v != tt.want || ok != tt.ok {
			t.Errorf("matchOption(%q) = %q, %v want %q, %v", tt.arg, v, ok, tt.want, tt.ok)
		}
	}
	// /queue's cancel controls and /settings' when-full menu, with the
	// commands that press them.
	raw = json.RawMessage(`[
		{"type":1,"components":[{"type":3,"custom_id":"/queue/message","placeholder":"Cancel the waiting pins of one message",
			"options":[{"label":"Message 1: cancel its 2 waiting pins","value":"7001/1005","description":"@alice_pins · the first starts in 5m"},
			           {"label":"Message 2: cancel its waiting pin","value":"7002/1001"}]}]},
		{"type":1,"components":[{"type":2,"style":4,"label":"Cancel all on @alice_pins","custom_id":"/queue/all/7001"},
		                        {"type":2,"style":4,"label":"Cancel all on @alice_art","custom_id":"/queue/all/7002"}]},
		{"type":1,"components":[{"type":3,"custom_id":"/settings/whenfull","placeholder":"At the 12-hour limit, /pin…",
			"options":[{"label":"At the limit: skip the rest","value":"skip","default":true},{"label":"At the limit: queue the rest","value":"queue"}]}]}
	]`)
	if cs, err = parseComponents(raw); err != nil {
		t.Fatal(err)
	}
	want = `[menu "Cancel the waiting pins of one message"] — pick with /cancel N (N the message's number)
    Message 1: cancel its 2 waiting pins — @alice_pins · the first starts in 5m
    Message 2: cancel its waiting pin
[button "Cancel all on @alice_pins"] — press with /cancel all alice_pins
[button "Cancel all on @alice_art"] — press with /cancel all alice_art
[menu "At the 12-hour limit, /pin…"] — pick with /whenfull queue or /whenfull skip
  * At the limit: skip the rest
    At the limit: queue the rest`
	if got := renderComponents(cs); got != want {
		t.Errorf("renderComponents =\n%s\nwant\n%s", got, want)
	}
	one := []component{{Type: discord.ComponentTypeButton, Label: "Cancel all waiting pins", CustomID: "/queue/all/7001"}}
	if got, want := renderComponents(one), `[button "Cancel all waiting pins"] — press with /cancel all`; got != want {
		t.Errorf("renderComponents of one button = %q want %q", got, want)
	}
	for _, tt := range []struct {
		arg, want string
		ok        bool
	}{
		{"1", "7001/1005", true},
		{"2", "7002/1001", true},
		{"1001", "7002/1001", true},
		{"3", "", false},
		{"7001", "", false},
	} {
		if v, ok := cancelOption(cs[0].Options, tt.arg); v != tt.want || ok != tt.ok {
			t.Errorf("cancelOption(%q) = %q, %v want %q, %v", tt.arg, v, ok, tt.want, tt.ok)
		}
	}
	if cs, err := parseComponents(nil); err != nil || cs != nil {
		t.Errorf("parseComponents(nil) = %v, %v", cs, err)
	}
	if _, err := parseComponents(json.RawMessage(`{`)); err == nil {
		t.Error("parseComponents of bad JSON: no error")
	}
}

func TestRenderEmbeds(t *testing.T) {
	t.Parallel()
	es := []discord.Embed{{
		Title:       "**Pinned**",
		Description: `by @alice\_pins`,
		Fields:      []discord.EmbedField{{Name: "Count", Value: "3/100"}},
		Image:       &discord.EmbedResource{URL: "http://img/1.png"},
		Footer:      &discord.EmbedFooter{Text: "pinbot"},
	}}
	want := "[embed] Pinned\nby @alice_pins\nCount: 3/100\nimage: http://img/1.png\npinbot"
	if got := renderEmbeds(es, t0); got != want {
		t.Errorf("renderEmbeds =\n%s\nwant\n%s", got, want)
	}
}

// TestRenderAnswer checks how the parts of a reply are put together: the
// edit of the deferred response, followups after it, components of the
// last part, and a refusal.
func TestRenderAnswer(t *testing.T) {
	t.Parallel()
	part := func(kind discordtest.ResponseKind, id uint64, content string, body string) discordtest.Response {
		var comps json.RawMessage
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		comps = m["components"]
		return discordtest.Response{Kind: kind, Status: 200, MessageID: snowflake.ID(id),
			Data: &discordtest.MessageData{Content: content, HasContent: true, Components: comps}, Body: json.RawMessage(body)}
	}
	parts := []discordtest.Response{
		part(discordtest.KindEditOriginal, 1, "**first** part", `{"content":"x"}`),
		part(discordtest.KindFollowup, 2, "second part", `{"content":"y","components":[{"type":1,"components":[{"type":2,"label":"Go","url":"http://x/"}]}]}`),
	}
	ans, err := renderAnswer(parts, "", t0)
	if err != nil {
		t.Fatal(err)
	}
	want := "first part\nsecond part\n[button \"Go\"] http://x/"
	if ans.text != want || ans.messageID != 2 || len(ans.components) != 1 {
		t.Errorf("renderAnswer = %+v, want text %q on message 2", ans, want)
	}
	if !sentComponents(parts[1].Body) || sentComponents(parts[0].Body) || sentComponents(json.RawMessage("nope")) {
		t.Error("sentComponents misreads the bodies")
	}
	ans, err = renderAnswer(nil, "(Discord refused the bot's edit-original: 401 Invalid Webhook Token)", t0)
	if err != nil || ans.text != "(Discord refused the bot's edit-original: 401 Invalid Webhook Token)" {
		t.Errorf("renderAnswer of a refusal = %+v, %v", ans, err)
	}
}

func TestSplitPinArgs(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, msgs, board string }{
		{"1001 1002", "1001 1002", ""},
		{"messages:1001, 1002", "1001, 1002", ""},
		{"1001 board:Travel ideas", "1001", "Travel ideas"},
		{"messages:https://discord.com/channels/900/100/1001 board:70012", "https://discord.com/channels/900/100/1001", "70012"},
		{"board:Cats", "", "Cats"},
		{"1001xboard:Cats", "1001xboard:Cats", ""},
		{"  ", "", ""},
	}
	for i, tt := range tests {
		if m, b := splitPinArgs(tt.in); m != tt.msgs || b != tt.board {
			t.Errorf("step %d: splitPinArgs(%q) = %q, %q want %q, %q", i, tt.in, m, b, tt.msgs, tt.board)
		}
	}
}

func TestParsePage(t *testing.T) {
	t.Parallel()
	body := []byte("<html><head><title>pinbot: Linked</title></head><body>\n<h1>Linked</h1>\n<p>Linked Pinterest account a&amp;b. You can close this tab.</p>\n</body></html>")
	p := parsePage(body)
	if p.Title != "Linked" || p.Message != "Linked Pinterest account a&b. You can close this tab." {
		t.Errorf("parsePage = %+v", p)
	}
	if p := parsePage([]byte(`{"code":1}`)); p.Title != "" || p.Message != "" {
		t.Errorf("parsePage of JSON = %+v, want nothing", p)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "sandbox.key")
	k1, err := loadOrCreateKey(path)
	if err != nil || len(k1) != keySize {
		t.Fatalf("first load: %d bytes, %v", len(k1), err)
	}
	k2, err := loadOrCreateKey(path)
	if err != nil || string(k2) != string(k1) {
		t.Fatalf("second load: %v, same key %v", err, string(k2) == string(k1))
	}
	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOrCreateKey(bad); err == nil || !strings.Contains(err.Error(), "holds 6 bytes, want 16, 24 or 32") {
		t.Errorf("bad key: %v", err)
	}
}

// TestLoadOrCreateAdminToken: the first load makes a 64-digit token in
// a 0600 file, later loads read it back; a file with a short token or a
// space in it is refused with what to do.
func TestLoadOrCreateAdminToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "admin.token")
	t1, err := loadOrCreateAdminToken(path)
	if err != nil || len(t1) != 64 || strings.Trim(string(t1), "0123456789abcdef") != "" {
		t.Fatalf("first load: %q, %v", t1, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", info, err)
	}
	t2, err := loadOrCreateAdminToken(path)
	if err != nil || string(t2) != string(t1) {
		t.Fatalf("second load: %q, %v; want %q", t2, err, t1)
	}
	for i, content := range []string{"short\n", "0123456789abcdef 0123456789abcdef\n", "\n"} {
		bad := filepath.Join(dir, fmt.Sprintf("bad%d.token", i))
		if err := os.WriteFile(bad, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadOrCreateAdminToken(bad); err == nil || !strings.Contains(err.Error(), "delete it to get a new one") {
			t.Errorf("step %d: %q: %v", i, content, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	full := Config{EngineDir: "e", LinksDir: "l", KeyFile: "k"}
	if err := full.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		c    Config
		want string
	}{
		{Config{LinksDir: "l", KeyFile: "k"}, "Config.EngineDir"},
		{Config{EngineDir: "e", KeyFile: "k"}, "Config.LinksDir"},
		{Config{EngineDir: "e", LinksDir: "l"}, "Config.KeyFile"},
	} {
		if err := tt.c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want it to name %s", tt.c, err, tt.want)
		}
	}
}

func TestDemoWorldIsConsistent(t *testing.T) {
	t.Parallel()
	for _, m := range messages {
		if _, ok := channelByID(m.Channel); !ok {
			t.Errorf("message %d: unknown channel %d", m.ID, m.Channel)
		}
	}
	for _, u := range users {
		for _, id := range u.Links {
			if _, ok := accountByID(id); !ok {
				t.Errorf("user %s links unknown account %s", u.Name, id)
			}
		}
	}
	for _, a := range accounts {
		if len(a.Boards) == 0 {
			t.Errorf("account %s has no board", a.ID)
		}
	}
	if png := demoPNG("/img/1/a.png"); len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Errorf("demoPNG is not a PNG: % x", png[:min(8, len(png))])
	}
}

// TestDialAddr: the address the sandbox names its listener by is one a
// browser on the machine reaches, 127.0.0.1 for an unspecified host.
func TestDialAddr(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8081}, "127.0.0.1:8081"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8082}, "[::1]:8082"},
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 80}, "192.0.2.7:80"},
	} {
		if got := dialAddr(tt.addr); got != tt.want {
			t.Errorf("dialAddr(%v) = %q want %q", tt.addr, got, tt.want)
		}
	}
}
