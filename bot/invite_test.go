package bot

import (
	"strings"
	"testing"

	"github.com/disgoorg/disgo/discord"
)

func TestInvitePermissions(t *testing.T) {
	// The bit values Discord documents
	// (https://discord.com/developers/docs/topics/permissions), written
	// out so that a shift in the library's constants shows.
	const (
		viewChannel           = 1 << 10
		sendMessages          = 1 << 11
		readMessageHistory    = 1 << 16
		sendMessagesInThreads = 1 << 38
	)
	if want := discord.Permissions(viewChannel | sendMessages | readMessageHistory | sendMessagesInThreads); InvitePermissions != want {
		t.Errorf("InvitePermissions = %d, want %d", InvitePermissions, want)
	}
	if !InvitePermissions.Has(readPermissions) {
		t.Errorf("InvitePermissions lacks what fetching a message needs (%d)", readPermissions)
	}
	for _, p := range []discord.Permissions{discord.PermissionAdministrator, discord.PermissionManageMessages,
		discord.PermissionEmbedLinks, discord.PermissionAttachFiles, discord.PermissionMentionEveryone} {
		if InvitePermissions.Has(p) {
			t.Errorf("InvitePermissions asks for %s, which the bot does not use", p)
		}
	}
}

func TestInviteURL(t *testing.T) {
	id, err := ApplicationID("MTIwMDAwMDAwMDAwMDAwMDAwMA.x.y") // base64 of 1200000000000000000
	if err != nil {
		t.Fatal(err)
	}
	const want = "https://discord.com/oauth2/authorize?client_id=1200000000000000000" +
		"&permissions=274877975552&scope=bot+applications.commands"
	if got := InviteURL(id); got != want {
		t.Errorf("InviteURL(%d) = %s\nwant %s", id, got, want)
	}
}

func TestApplicationIDBadToken(t *testing.T) {
	for i, token := range []string{"", "x", "bm90IGFuIGlk.x.y", "MA.x.y"} {
		id, err := ApplicationID(token)
		if err == nil {
			t.Errorf("step %d: ApplicationID(%q) = %d, want an error", i, token, id)
			continue
		}
		if token != "" && strings.Contains(err.Error(), token) {
			t.Errorf("step %d: error %q quotes the token", i, err)
		}
	}
}
