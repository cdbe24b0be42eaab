package bot

import (
	"strings"
	"testing"

	"github.com/pinbot/pinbot/internal/limit/gcra"
)

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
		{"bad user rate", func(c *Config) { c.UserRate = gcra.Rate{Limit: 5} }, "Config.UserRate"},
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
