package discordtest

import (
	"github.com/disgoorg/disgo/discord"
)

// basePermissionsLocked returns a member's guild-wide permissions: every
// permission for the owner and for administrators, else the union of
// @everyone and the member's roles. The caller holds s.mu.
func (s *Server) basePermissionsLocked(gs *guildState, m *Member) discord.Permissions {
	if m.UserID == gs.OwnerID {
		return discord.PermissionsAll
	}
	var perms discord.Permissions
	if everyone, ok := gs.roles[gs.ID]; ok {
		perms = everyone.Permissions
	}
	for _, id := range m.Roles {
		if r, ok := gs.roles[id]; ok {
			perms |= r.Permissions
		}
	}
	if perms.Has(discord.PermissionAdministrator) {
		return discord.PermissionsAll
	}
	return perms
}

// channelPermissionsLocked returns a member's permissions in a channel: the
// base permissions, then the @everyone overwrite, then the member's role
// overwrites together, then the member's own overwrite. Threads use their
// parent's overwrites. Without VIEW_CHANNEL a member has no permission in
// the channel at all. The caller holds s.mu.
func (s *Server) channelPermissionsLocked(gs *guildState, ch *Channel, m *Member) discord.Permissions {
	base := s.basePermissionsLocked(gs, m)
	if base.Has(discord.PermissionAdministrator) {
		return discord.PermissionsAll
	}
	source := ch
	if isThread(ch.Type) {
		if parent, ok := s.channels[ch.ParentID]; ok {
			source = parent
		}
	}
	perms := base
	for _, o := range source.Overwrites {
		if o.Type == discord.PermissionOverwriteTypeRole && o.ID == gs.ID {
			perms = perms&^o.Deny | o.Allow
		}
	}
	var allow, deny discord.Permissions
	for _, o := range source.Overwrites {
		if o.Type != discord.PermissionOverwriteTypeRole || o.ID == gs.ID {
			continue
		}
		for _, id := range m.Roles {
			if id == o.ID {
				allow |= o.Allow
				deny |= o.Deny
			}
		}
	}
	perms = perms&^deny | allow
	for _, o := range source.Overwrites {
		if o.Type == discord.PermissionOverwriteTypeMember && o.ID == m.UserID {
			perms = perms&^o.Deny | o.Allow
		}
	}
	if !perms.Has(discord.PermissionViewChannel) {
		return 0
	}
	if isThread(ch.Type) && !perms.Has(discord.PermissionSendMessagesInThreads) {
		perms &^= discord.PermissionSendMessages
	}
	return perms
}
