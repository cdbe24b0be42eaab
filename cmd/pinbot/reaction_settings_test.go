package main

import (
	"strings"
	"testing"
)

// TestReactionSettings: pin reactions are on with 📌 by default;
// PINBOT_REACTIONS turns them off with off, false or 0 (and on again with
// on, true or 1), and PINBOT_PIN_EMOJI takes a unicode emoji or a custom
// one, written name:id or as Discord shows it; the flags win.
func TestReactionSettings(t *testing.T) {
	t.Parallel()
	full := botEnv(t, t.TempDir())
	st := newSettings(func(k string) string { return full[k] })
	b, err := st.validateBot()
	if err != nil || b.noReactions || b.pinEmoji != "📌" {
		t.Fatalf("defaults: no reactions %v, emoji %q, %v; want reactions on with 📌", b.noReactions, b.pinEmoji, err)
	}
	for i, c := range []struct {
		env   map[string]string
		args  []string
		off   bool
		emoji string
	}{
		{env: map[string]string{"PINBOT_REACTIONS": "off"}, off: true, emoji: "📌"},
		{env: map[string]string{"PINBOT_REACTIONS": "FALSE"}, off: true, emoji: "📌"},
		{env: map[string]string{"PINBOT_REACTIONS": "0"}, off: true, emoji: "📌"},
		{env: map[string]string{"PINBOT_REACTIONS": "on"}, emoji: "📌"},
		{env: map[string]string{"PINBOT_REACTIONS": "true"}, emoji: "📌"},
		{env: map[string]string{"PINBOT_PIN_EMOJI": "📍"}, emoji: "📍"},
		{env: map[string]string{"PINBOT_PIN_EMOJI": "pinit:123456789012345678"}, emoji: "pinit:123456789012345678"},
		{env: map[string]string{"PINBOT_PIN_EMOJI": "<:pinit:123456789012345678>"}, emoji: "pinit:123456789012345678"},
		{env: map[string]string{"PINBOT_REACTIONS": "off"}, args: []string{"--reactions", "on", "--pin-emoji", "⭐"}, emoji: "⭐"},
	} {
		env := with(full, c.env)
		st := newSettings(func(k string) string { return env[k] })
		fs := newFlagSet("")
		st.bind(fs, "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		st.noteFlags(fs)
		b, err := st.validateBot()
		if err != nil || b.noReactions != c.off || b.pinEmoji != c.emoji {
			t.Errorf("step %d: no reactions %v, emoji %q, %v; want %v, %q", i, b.noReactions, b.pinEmoji, err, c.off, c.emoji)
		}
	}
}

// TestReactionSettingsErrors: a bad PINBOT_REACTIONS or PINBOT_PIN_EMOJI
// stops pinbot at start with exit status 2 and a message naming the
// setting.
func TestReactionSettingsErrors(t *testing.T) {
	t.Parallel()
	full := botEnv(t, t.TempDir())
	for i, tt := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{env: with(full, map[string]string{"PINBOT_REACTIONS": "maybe", "PINBOT_PIN_EMOJI": "pin"}),
			want: []string{"2 problems with the configuration",
				`invalid PINBOT_REACTIONS "maybe": want on or off`,
				`invalid PINBOT_PIN_EMOJI: "pin" is neither a unicode emoji`}},
		{env: full, args: []string{"--pin-emoji", "pin:abc"},
			want: []string{`invalid --pin-emoji: "pin:abc" is neither a unicode emoji, such as 📌, nor a custom emoji as name:id`}},
	} {
		r := pinbot(t, "", tt.env, tt.args...)
		r.wantCode(t, strings.Join(tt.args, " "), exitUsage)
		for _, w := range tt.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("step %d: stderr = %q, want it to contain %q", i, r.stderr, w)
			}
		}
	}
}
