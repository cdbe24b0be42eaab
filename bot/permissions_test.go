package bot

import (
	"testing"

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
