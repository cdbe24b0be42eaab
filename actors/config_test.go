package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestConfigValidate: the defaults pass, the limits of each range pass,
// and each setting out of range is refused with an error naming it.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	edges := DefaultConfig()
	edges.Limit, edges.Window, edges.Lease, edges.IdleTimeout = 1<<16, MaxWindow, time.Millisecond, time.Millisecond
	edges.SnapshotEvery, edges.TTLMargin, edges.CheckpointEvery, edges.CheckpointKeep, edges.MaxJournalBatch = 1, 0, 0, 0, 0
	if err := edges.Validate(); err != nil {
		t.Fatalf("settings at the edges of their ranges: %v", err)
	}
	for _, tt := range []struct {
		want string
		set  func(*Config)
	}{
		{"Config.Limit", func(c *Config) { c.Limit = 0 }},
		{"Config.Limit", func(c *Config) { c.Limit = 1<<16 + 1 }},
		{"Config.Window", func(c *Config) { c.Window = time.Millisecond - 1 }},
		{"Config.Window", func(c *Config) { c.Window = MaxWindow + time.Millisecond }},
		{"Config.Lease", func(c *Config) { c.Lease = 0 }},
		{"Config.IdleTimeout", func(c *Config) { c.IdleTimeout = 0 }},
		{"Config.SnapshotEvery", func(c *Config) { c.SnapshotEvery = 0 }},
		{"Config.TTLMargin", func(c *Config) { c.TTLMargin = -time.Second }},
		{"Config.CheckpointEvery", func(c *Config) { c.CheckpointEvery = -time.Second }},
		{"Config.CheckpointKeep", func(c *Config) { c.CheckpointKeep = -1 }},
		{"Config.MaxJournalBatch", func(c *Config) { c.MaxJournalBatch = -1 }},
	} {
		c := DefaultConfig()
		tt.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s out of range: Validate = %v, want an error naming it", tt.want, err)
		}
		if _, err := New(c, nil, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s out of range: New = %v, want an error naming it", tt.want, err)
		}
	}
}
