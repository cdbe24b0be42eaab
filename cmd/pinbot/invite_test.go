package main

import (
	"strings"
	"testing"
)

// inviteToken is a bot token of application 1200000000000000000 (its
// first part is that ID in base64).
const inviteToken = "MTIwMDAwMDAwMDAwMDAwMDAwMA.x.y"

// inviteURL is the invite of inviteToken's application: permissions are
// View Channel, Send Messages, Read Message History and Send Messages in
// Threads.
const inviteURL = "https://discord.com/oauth2/authorize?client_id=1200000000000000000" +
	"&permissions=274877975552&scope=bot+applications.commands"

func TestInvite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		args []string
	}{
		{env: map[string]string{discordTokenEnv: inviteToken}, args: []string{"invite"}},
		{args: []string{"invite", "--discord-token", inviteToken}},
		{args: []string{"--discord-token", inviteToken, "invite"}},
		// The flag wins over the variable.
		{env: map[string]string{discordTokenEnv: "bad"}, args: []string{"invite", "--discord-token=" + inviteToken}},
		// The settings of the bot are not read: the invite needs none.
		{env: map[string]string{discordTokenEnv: inviteToken, "PINBOT_PUBLIC_URL": "not a url",
			"PINBOT_DISCORD_API_URL": "http://127.0.0.1:1"}, args: []string{"invite"}},
	}
	for i, tt := range tests {
		r := pinbot(t, "", tt.env, tt.args...)
		r.wantCode(t, strings.Join(tt.args, " "), exitOK)
		if r.stdout != inviteURL+"\n" || r.stderr != "" {
			t.Errorf("step %d: %q: stdout %q, stderr %q; want stdout %q", i, tt.args, r.stdout, r.stderr, inviteURL+"\n")
		}
	}
}

func TestInviteErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		args []string
		want string // in stderr
	}{
		{args: []string{"invite"}, want: "invite: set DISCORD_TOKEN (or --discord-token) to the bot token"},
		{env: map[string]string{discordTokenEnv: "not-a-discord-bot-token"}, args: []string{"invite"},
			want: "invalid DISCORD_TOKEN: it is not a Discord bot token"},
		{args: []string{"invite", "--discord-token", "bm90IGFuIGlk.x.y"},
			want: "invalid --discord-token: it is not a Discord bot token"},
		{env: map[string]string{discordTokenEnv: inviteToken + "\n"}, args: []string{"invite"},
			want: "invalid DISCORD_TOKEN: it contains spaces or line breaks"},
		{env: map[string]string{discordTokenEnv: inviteToken}, args: []string{"invite", "extra"},
			want: `invite: unexpected argument "extra"`},
		{env: map[string]string{discordTokenEnv: inviteToken}, args: []string{"invite", "--data-dir", "x"},
			want: "flag provided but not defined: -data-dir"},
	}
	for i, tt := range tests {
		r := pinbot(t, "", tt.env, tt.args...)
		r.wantCode(t, strings.Join(tt.args, " "), exitUsage)
		if r.stdout != "" {
			t.Errorf("step %d: %q: stdout = %q, want nothing", i, tt.args, r.stdout)
		}
		if !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "Run 'pinbot invite --help' for usage.") {
			t.Errorf("step %d: %q: stderr = %q, want %q and the usage hint", i, tt.args, r.stderr, tt.want)
		}
		for _, tok := range []string{"not-a-discord-bot-token", "bm90IGFuIGlk"} {
			if strings.Contains(r.stderr, tok) {
				t.Errorf("step %d: %q: stderr shows the token: %q", i, tt.args, r.stderr)
			}
		}
	}
}

func TestInviteHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"invite", "--help"}, {"invite", "-h"}, {"help", "invite"}} {
		// No token is needed for the help.
		r := pinbot(t, "", nil, args...)
		r.wantCode(t, strings.Join(args, " "), exitOK)
		for _, w := range []string{"pinbot invite [flags]", "--discord-token TOKEN", "DISCORD_TOKEN",
			"bot and applications.commands", "View Channel", "Read Message History",
			"Send Messages in", "Threads", "--help"} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%q: help lacks %q:\n%s", args, w, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "--data-dir") {
			t.Errorf("%q: help lists --data-dir, which invite does not take:\n%s", args, r.stdout)
		}
	}
	r := pinbot(t, "", nil, "--help")
	if !strings.Contains(r.stdout, "pinbot [flags] invite [flags]") {
		t.Errorf("pinbot --help lacks the invite command:\n%s", r.stdout)
	}
}
