package sandbox

import (
	"testing"

	"github.com/disgoorg/disgo/discord"
)

// TestSeedServerManagers: the mods' member (bob) has Manage Channels in
// every channel and Manage Server, which /autopin add and /server check;
// the other demo users have neither.
func TestSeedServerManagers(t *testing.T) {
	t.Parallel()
	s := newStandInConsole(t)
	for _, u := range users {
		for _, ch := range channels {
			p, err := s.sb.discord.Permissions(ch.ID, u.ID)
			if err != nil {
				t.Fatal(err)
			}
			manages := p&modsPermissions == modsPermissions
			if want := u.Name == "bob"; manages != want {
				t.Errorf("%s in #%s: permissions %v, want Manage Channels and Manage Server %v", u.Name, ch.Name, p, want)
			}
			if !manages && p&(discord.PermissionManageChannels|discord.PermissionManageGuild|discord.PermissionAdministrator) != 0 {
				t.Errorf("%s in #%s: permissions %v manage something", u.Name, ch.Name, p)
			}
		}
	}
}

// TestAutopinAndServerUsage: lines that name no channel the user can
// pick, or that lack an option or have one too many, are answered with
// their usage at the console.
func TestAutopinAndServerUsage(t *testing.T) {
	t.Parallel()
	s := newStandInConsole(t)
	usage := "error: usage: /autopin add CHANNEL BOARD, /autopin list, /autopin pause|resume|remove CHANNEL"
	for _, line := range []string{
		"/autopin",
		"/autopin stop art",
		"/autopin list art",
		"/autopin add art",
		"/autopin pause",
		"/autopin remove art Cats",
	} {
		s.expect(line, usage)
	}
	s.expect("/autopin add gallery Cats", `error: no channel "gallery"; there are #general, #art, #staff`)
	s.expect("/autopin pause #staff", "error: alice cannot view #staff")
	s.expect("/server pin_emoji:", "error: usage: /server [pin_emoji:EMOJI|reset]")
	s.expect("/server 📌 🖼️", "error: usage: /server [pin_emoji:EMOJI|reset]")
}
