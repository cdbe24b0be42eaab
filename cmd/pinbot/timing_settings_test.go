package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
)

// TestTimingSettings: PINBOT_LEASE, PINBOT_SLOT_MARGIN and
// PINBOT_LISTING_LAG default to the engine's and the bot's defaults, and
// take any duration within their bounds.
func TestTimingSettings(t *testing.T) {
	t.Parallel()
	env := botEnv(t, t.TempDir())
	st := newSettings(func(k string) string { return env[k] })
	b, err := st.validateBot()
	if err != nil {
		t.Fatal(err)
	}
	if b.lease != actors.DefaultConfig().Lease || b.slotMargin != bot.DefaultSlotMargin || b.listingLag != bot.DefaultListingLag {
		t.Errorf("defaults: lease %v, slot margin %v, listing lag %v; want %v, %v, %v",
			b.lease, b.slotMargin, b.listingLag, actors.DefaultConfig().Lease, bot.DefaultSlotMargin, bot.DefaultListingLag)
	}
	env = with(env, map[string]string{"PINBOT_LEASE": "45s", "PINBOT_SLOT_MARGIN": "1s", "PINBOT_LISTING_LAG": "1500ms"})
	st = newSettings(func(k string) string { return env[k] })
	b, err = st.validateBot()
	if err != nil || b.lease != 45*time.Second || b.slotMargin != time.Second || b.listingLag != 1500*time.Millisecond {
		t.Errorf("set: lease %v, slot margin %v, listing lag %v, %v; want 45s, 1s, 1.5s", b.lease, b.slotMargin, b.listingLag, err)
	}
}

// TestTimingSettingsErrors: a bad lease, slot margin or listing lag is
// refused with exit status 2 and a message naming the setting, every one
// at once; so is a margin that leaves too little of the lease to send a
// pin in.
func TestTimingSettingsErrors(t *testing.T) {
	t.Parallel()
	full := botEnv(t, t.TempDir())
	tests := []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{env: with(full, map[string]string{"PINBOT_LEASE": "1s", "PINBOT_SLOT_MARGIN": "soon", "PINBOT_LISTING_LAG": "2h"}),
			want: []string{"3 problems with the configuration",
				`invalid PINBOT_LEASE "1s": want a duration from 45s to 1h0m0s, such as 5m`,
				`invalid PINBOT_SLOT_MARGIN "soon": want a duration from 500ms to 30m0s, such as 1m`,
				`invalid PINBOT_LISTING_LAG "2h": want a duration from 500ms to 1h0m0s, such as 1m`}},
		{env: full, args: []string{"--listing-lag", "1500us"},
			want: []string{`invalid --listing-lag "1500us": want a duration from 500ms`}},
		{env: full, args: []string{"--lease", "45000500us"},
			want: []string{`invalid --lease "45000500us": want a whole number of milliseconds`}},
		{env: with(full, map[string]string{"PINBOT_LEASE": "45s", "PINBOT_SLOT_MARGIN": "6s"}),
			want: []string{`invalid PINBOT_SLOT_MARGIN "6s": want at most PINBOT_LEASE (45s) less 40s`}},
		{env: full, args: []string{"--slot-margin", "4m30s"},
			want: []string{`invalid --slot-margin "4m30s": want at most --lease (5m0s) less 40s`}},
	}
	for i, tt := range tests {
		r := pinbot(t, "", tt.env, tt.args...)
		r.wantCode(t, strings.Join(tt.args, " "), exitUsage)
		for _, w := range tt.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("step %d: stderr = %q, want it to contain %q", i, r.stderr, w)
			}
		}
	}
}
