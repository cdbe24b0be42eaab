package bot

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

func TestMemberPermissions(t *testing.T) {
	const (
		guild snowflake.ID = 100
		owner snowflake.ID = 1
		user  snowflake.ID = 2
		mods  snowflake.ID = 10
		muted snowflake.ID = 11
	)
	view := discord.PermissionViewChannel
	hist := discord.PermissionReadMessageHistory
	read := view | hist
	roles := []discord.Role{
		{ID: guild, Permissions: read | discord.PermissionSendMessages},
		{ID: mods, Permissions: discord.PermissionManageMessages},
		{ID: muted, Permissions: 0},
	}
	everyone := func(allow, deny discord.Permissions) discord.PermissionOverwrite {
		return discord.RolePermissionOverwrite{RoleID: guild, Allow: allow, Deny: deny}
	}
	role := func(id snowflake.ID, allow, deny discord.Permissions) discord.PermissionOverwrite {
		return discord.RolePermissionOverwrite{RoleID: id, Allow: allow, Deny: deny}
	}
	member := func(id snowflake.ID, allow, deny discord.Permissions) discord.PermissionOverwrite {
		return discord.MemberPermissionOverwrite{UserID: id, Allow: allow, Deny: deny}
	}
	tests := []struct {
		name     string
		user     snowflake.ID
		roles    []snowflake.ID
		rolePerm discord.Permissions // extra permissions for mods
		ow       discord.PermissionOverwrites
		want     bool // can read
	}{
		{name: "everyone can read", user: user, want: true},
		{name: "everyone denied view", user: user, ow: discord.PermissionOverwrites{everyone(0, view)}, want: false},
		{name: "everyone denied history", user: user, ow: discord.PermissionOverwrites{everyone(0, hist)}, want: false},
		{name: "role allow beats everyone deny", user: user, roles: []snowflake.ID{mods},
			ow: discord.PermissionOverwrites{everyone(0, view), role(mods, view, 0)}, want: true},
		{name: "role allow beats another role's deny", user: user, roles: []snowflake.ID{mods, muted},
			ow: discord.PermissionOverwrites{role(muted, 0, view), role(mods, view, 0)}, want: true},
		{name: "role deny alone", user: user, roles: []snowflake.ID{muted},
			ow: discord.PermissionOverwrites{role(muted, 0, view)}, want: false},
		{name: "overwrite of a role the user lacks", user: user,
			ow: discord.PermissionOverwrites{everyone(0, view), role(mods, view, 0)}, want: false},
		{name: "member deny beats role allow", user: user, roles: []snowflake.ID{mods},
			ow: discord.PermissionOverwrites{role(mods, read, 0), member(user, 0, view)}, want: false},
		{name: "member allow beats everyone deny", user: user,
			ow: discord.PermissionOverwrites{everyone(0, read), member(user, read, 0)}, want: true},
		{name: "member overwrite of someone else", user: user,
			ow: discord.PermissionOverwrites{everyone(0, view), member(3, view, 0)}, want: false},
		{name: "owner sees everything", user: owner, ow: discord.PermissionOverwrites{everyone(0, read)}, want: true},
		{name: "administrator sees everything", user: user, roles: []snowflake.ID{mods}, rolePerm: discord.PermissionAdministrator,
			ow: discord.PermissionOverwrites{everyone(0, read), member(user, 0, read)}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := append([]discord.Role(nil), roles...)
			rs[1].Permissions |= tt.rolePerm
			p := memberPermissions(guild, owner, rs, tt.user, tt.roles, tt.ow)
			if got := p.Has(read); got != tt.want {
				t.Fatalf("can read = %v (perms %d), want %v", got, p, tt.want)
			}
			if !p.Has(view) && p != discord.PermissionsNone {
				t.Fatalf("no VIEW_CHANNEL but permissions %d", p)
			}
		})
	}
}

func TestSplitMessage(t *testing.T) {
	long := strings.Repeat("x", 4500)
	lines := strings.Repeat(strings.Repeat("y", 150)+"\n", 30)
	tests := []struct {
		name  string
		in    string
		parts int
	}{
		{"short", "hello", 1},
		{"empty", "", 1},
		{"exactly 2000", strings.Repeat("a", 2000), 1},
		{"one long line", long, 3},
		{"many lines", lines, 3},
		{"multibyte", strings.Repeat("é", 2001), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := splitMessage(tt.in, 2000)
			if len(parts) != tt.parts {
				t.Fatalf("%d parts, want %d", len(parts), tt.parts)
			}
			joined := 0
			for i, p := range parts {
				if n := utf8.RuneCountInString(p); n > 2000 {
					t.Fatalf("part %d has %d runes", i, n)
				}
				if strings.Contains(tt.in, "\n") && strings.HasPrefix(p, "\n") {
					t.Fatalf("part %d starts with a newline", i)
				}
				joined += utf8.RuneCountInString(strings.ReplaceAll(p, "\n", ""))
			}
			if want := utf8.RuneCountInString(strings.ReplaceAll(tt.in, "\n", "")); joined != want {
				t.Fatalf("parts hold %d runes of text, want %d", joined, want)
			}
		})
	}
}

func TestImagesOf(t *testing.T) {
	png, mp4 := "image/png", "video/mp4"
	alt := "a cat"
	m := discord.Message{
		Attachments: []discord.Attachment{
			{Filename: "a.png", ContentType: &png, URL: "https://cdn.discordapp.com/a.png?ex=1", Description: &alt},
			{Filename: "v.mp4", ContentType: &mp4, URL: "https://cdn.discordapp.com/v.mp4"},
			{Filename: "b.JPG", URL: "https://cdn.discordapp.com/b.JPG"},
			{Filename: "notes.txt", URL: "https://cdn.discordapp.com/notes.txt"},
			{Filename: "dup.png", ContentType: &png, URL: "https://cdn.discordapp.com/a.png?ex=1"},
		},
		Embeds: []discord.Embed{
			{Type: discord.EmbedTypeImage, URL: "https://i.example/c.gif", Thumbnail: &discord.EmbedResource{URL: "https://i.example/c.gif"}},
			{Type: discord.EmbedTypeRich, Title: "rich", Image: &discord.EmbedResource{URL: "https://i.example/d.png"}},
			{Type: discord.EmbedTypeGifV, URL: "https://tenor.example/x", Image: &discord.EmbedResource{URL: "https://tenor.example/x.gif"}},
			{Type: discord.EmbedTypeLink, URL: "https://news.example/"},
		},
	}
	got := imagesOf(m)
	want := []string{"https://cdn.discordapp.com/a.png?ex=1", "https://cdn.discordapp.com/b.JPG", "https://i.example/c.gif", "https://i.example/d.png"}
	if len(got) != len(want) {
		t.Fatalf("images = %+v, want %v", got, want)
	}
	for i := range want {
		if got[i].URL != want[i] {
			t.Errorf("image %d = %s, want %s", i, got[i].URL, want[i])
		}
	}
	if got[0].Alt != alt || got[3].Alt != "rich" {
		t.Errorf("alt texts = %q, %q", got[0].Alt, got[3].Alt)
	}
	if n := len(imagesOf(discord.Message{Content: "no pictures"})); n != 0 {
		t.Errorf("text-only message has %d images", n)
	}
}

func TestRedact(t *testing.T) {
	in := `Post "http://127.0.0.1:1/api/v10/interactions/123/aW50ZXJhY3Rpb246abc/callback": EOF; PATCH /webhooks/456/secretTOKEN/messages/@original` +
		` {"content":"<https://www.pinterest.com/oauth/?client_id=1\u0026state=S3cr3tState\u0026x=1>"} cb?code=C0de&state=Other`
	out := redact(in)
	for _, secret := range []string{"aW50ZXJhY3Rpb246abc", "secretTOKEN", "S3cr3tState", "C0de", "Other"} {
		if strings.Contains(out, secret) {
			t.Fatalf("redact left %q in %q", secret, out)
		}
	}
	if !strings.Contains(out, "/interactions/123/<redacted>/callback") || !strings.Contains(out, "/webhooks/456/<redacted>/messages") {
		t.Fatalf("redact(%q) = %q", in, out)
	}

	// Gateway payloads as disgo logs them at debug level, plain and quoted
	// inside another JSON string, and an Authorization header.
	for _, in := range []string{
		`{"op":2,"d":{"token":"MTIzNDU2.Gx.BotSecret","intents":1}}`,
		`{"data":"{\"t\":\"INTERACTION_CREATE\",\"d\":{\"token\": \"aW50ZXJhY3Rpb246BotSecret\"}}"}`,
		`Authorization: Bot MTIzNDU2.Gx.BotSecret`,
	} {
		if out := redact(in); strings.Contains(out, "BotSecret") || !strings.Contains(out, "<redacted>") {
			t.Errorf("redact(%q) = %q", in, out)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	base := func() Config {
		return Config{Token: "MTIwMDAwMDAwMDAwMDAwMDAwMA.x.y", Engine: nonNilEngine, Links: nonNilLinks, Pinterest: nonNilPinterest}
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"ok", func(*Config) {}, ""},
		{"no token", func(c *Config) { c.Token = "" }, "Config.Token is empty"},
		{"bad token", func(c *Config) { c.Token = "not-a-token" }, "Config.Token is not a Discord bot token"},
		{"no engine", func(c *Config) { c.Engine = nil }, "Config.Engine is nil"},
		{"no links", func(c *Config) { c.Links = nil }, "Config.Links is nil"},
		{"no pinterest", func(c *Config) { c.Pinterest = nil }, "Config.Pinterest is nil"},
		{"bad api url", func(c *Config) { c.APIURL = "ftp://x" }, "Config.APIURL"},
		{"bad gateway url", func(c *Config) { c.GatewayURL = "http://x" }, "Config.GatewayURL"},
		{"negative shards", func(c *Config) { c.Shards = -1 }, "Config.Shards"},
		{"negative workers", func(c *Config) { c.Workers = -1 }, "Config.Workers"},
		{"negative handler timeout", func(c *Config) { c.HandlerTimeout = -1 }, "Config.HandlerTimeout"},
		{"negative close timeout", func(c *Config) { c.CloseTimeout = -1 }, "Config.CloseTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.change(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), c.Token) && c.Token != "" {
				t.Fatalf("error %q quotes the token", err)
			}
		})
	}
}

func TestCheckToken(t *testing.T) {
	tests := []struct {
		token string
		ok    bool
	}{
		{"MTIwMDAwMDAwMDAwMDAwMDAwMA.x.y", true},
		{"MTIwMDAwMDAwMDAwMDAwMDAwMA", true},
		{"", false},
		{"x", false},
		{"not-a-discord-bot-token-at-all", false},
		{"bm90IGFuIGlk.x.y", false}, // base64 of "not an id"
	}
	for i, tt := range tests {
		err := CheckToken(tt.token)
		if (err == nil) != tt.ok {
			t.Errorf("step %d: CheckToken(%q) = %v, want ok %v", i, tt.token, err, tt.ok)
		}
		if err != nil && tt.token != "" && strings.Contains(err.Error(), tt.token) {
			t.Errorf("step %d: error %q quotes the token", i, err)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{999 * time.Millisecond, "0s"},
		{time.Second, "1s"},
		{45 * time.Second, "45s"},
		{3*time.Minute + 5*time.Second, "3m 5s"},
		{5 * time.Minute, "5m"},
		{time.Hour + 7*time.Second, "1h 7s"},
		{90 * time.Minute, "1h 30m"},
		{12*time.Hour - 12*time.Second, "11h 59m 48s"},
		{(12*time.Hour - 12*time.Second).Truncate(time.Minute), "11h 59m"},
		{12 * time.Hour, "12h"},
		{72 * time.Hour, "72h"},
		{-42 * time.Second, "-42s"},
	}
	for i, tt := range tests {
		if got := FormatDuration(tt.d); got != tt.want {
			t.Errorf("step %d: FormatDuration(%v) = %q want %q", i, tt.d, got, tt.want)
		}
	}
}
