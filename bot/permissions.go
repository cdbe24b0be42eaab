package bot

import (
	"context"
	"errors"
	"fmt"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// readPermissions are what a user needs to read a channel's past messages.
const readPermissions = discord.PermissionViewChannel | discord.PermissionReadMessageHistory

// memberPermissions computes a member's permissions in a channel the way
// Discord does: the guild owner and ADMINISTRATOR have every permission;
// otherwise the @everyone role (whose ID is the guild's) and the member's
// roles give the base, then the channel's @everyone overwrite, the role
// overwrites together and the member's own overwrite apply in that order.
// Without VIEW_CHANNEL in the end a member has no permission in the
// channel at all.
func memberPermissions(guildID, ownerID snowflake.ID, roles []discord.Role, userID snowflake.ID, memberRoles []snowflake.ID, overwrites discord.PermissionOverwrites) discord.Permissions {
	if userID == ownerID {
		return discord.PermissionsAll
	}
	has := make(map[snowflake.ID]bool, len(memberRoles))
	for _, id := range memberRoles {
		has[id] = true
	}
	var perms discord.Permissions
	for _, r := range roles {
		if r.ID == guildID || has[r.ID] {
			perms |= r.Permissions
		}
	}
	if perms.Has(discord.PermissionAdministrator) {
		return discord.PermissionsAll
	}
	if o, ok := overwrites.Get(discord.PermissionOverwriteTypeRole, guildID); ok {
		if ro, ok := o.(discord.RolePermissionOverwrite); ok {
			perms = perms&^ro.Deny | ro.Allow
		}
	}
	var allow, deny discord.Permissions
	for _, o := range overwrites {
		ro, ok := o.(discord.RolePermissionOverwrite)
		if !ok || ro.RoleID == guildID || !has[ro.RoleID] {
			continue
		}
		allow |= ro.Allow
		deny |= ro.Deny
	}
	perms = perms&^deny | allow
	if o, ok := overwrites.Get(discord.PermissionOverwriteTypeMember, userID); ok {
		if mo, ok := o.(discord.MemberPermissionOverwrite); ok {
			perms = perms&^mo.Deny | mo.Allow
		}
	}
	if !perms.Has(discord.PermissionViewChannel) {
		return discord.PermissionsNone
	}
	return perms
}

// accessChecker answers, for one interaction, whether its user may read
// channels of its guild. It fetches the guild, its roles and the member
// once, over REST (the gateway cache may be empty), and each channel once.
// It is used by one goroutine.
type accessChecker struct {
	api     discordio.API
	ctx     context.Context
	guildID snowflake.ID
	userID  snowflake.ID

	// invokingChannel and invokingPerms come with the interaction: Discord
	// computed the user's permissions there.
	invokingChannel snowflake.ID
	invokingPerms   discord.Permissions

	loaded   bool
	ownerID  snowflake.ID
	roles    []discord.Role
	member   *discord.Member
	channels map[snowflake.ID]accessResult
}

// accessResult is the answer for one channel.
type accessResult struct {
	ok bool
	// why, when !ok, tells the user why, without saying whether the
	// channel exists when they may not see it.
	why string
}

// errAccessCheck wraps a failure to find out, as opposed to a "no".
var errAccessCheck = errors.New("bot: permission check failed")

// canRead reports whether the user may view channelID and read its message
// history. Threads take their parent's permissions; a private thread is
// allowed only when the command was run in it, as the user's membership
// of other private threads is not checked.
func (a *accessChecker) canRead(channelID snowflake.ID) (accessResult, error) {
	if channelID == a.invokingChannel {
		if a.invokingPerms.Has(readPermissions) {
			return accessResult{ok: true}, nil
		}
		return accessResult{why: "you cannot read the message history of this channel"}, nil
	}
	if r, ok := a.channels[channelID]; ok {
		return r, nil
	}
	r, err := a.check(channelID)
	if err != nil {
		return accessResult{}, err
	}
	if a.channels == nil {
		a.channels = make(map[snowflake.ID]accessResult)
	}
	a.channels[channelID] = r
	return r, nil
}

var (
	noAccess    = accessResult{why: "you cannot view that channel"}
	botNoAccess = accessResult{why: "Pinbot cannot view that channel"}
)

// guildChannel fetches channel id when it belongs to the command's guild;
// otherwise it returns nil and why the user may not use it, or an error.
func (a *accessChecker) guildChannel(id snowflake.ID) (discord.GuildChannel, accessResult, error) {
	ch, err := a.api.Channel(a.ctx, id)
	if err != nil {
		switch {
		case discordio.NotFound(err):
			return nil, noAccess, nil
		case discordio.Forbidden(err):
			return nil, botNoAccess, nil
		}
		return nil, accessResult{}, fmt.Errorf("%w: channel %d: %w", errAccessCheck, id, err)
	}
	gc, ok := ch.(discord.GuildChannel)
	if !ok || gc.GuildID() != a.guildID {
		return nil, noAccess, nil
	}
	return gc, accessResult{}, nil
}

func (a *accessChecker) check(channelID snowflake.ID) (accessResult, error) {
	gc, denied, err := a.guildChannel(channelID)
	if gc == nil {
		return denied, err
	}
	overwrites := gc.PermissionOverwrites()
	if th, ok := gc.(discord.GuildThread); ok {
		if th.Type() == discord.ChannelTypeGuildPrivateThread {
			return accessResult{why: "it is in a private thread; run the command inside that thread"}, nil
		}
		pc, denied, err := a.guildChannel(*th.ParentID())
		if pc == nil {
			return denied, err
		}
		overwrites = pc.PermissionOverwrites()
	}
	if err := a.load(); err != nil {
		return accessResult{}, err
	}
	if a.member == nil {
		return noAccess, nil
	}
	perms := memberPermissions(a.guildID, a.ownerID, a.roles, a.userID, a.member.RoleIDs, overwrites)
	switch {
	case !perms.Has(discord.PermissionViewChannel):
		return noAccess, nil
	case !perms.Has(discord.PermissionReadMessageHistory):
		return accessResult{why: "you cannot read the message history of that channel"}, nil
	}
	return accessResult{ok: true}, nil
}

// load fetches the guild's owner, its roles and the member, once.
func (a *accessChecker) load() error {
	if a.loaded {
		return nil
	}
	g, err := a.api.Guild(a.ctx, a.guildID)
	if err != nil {
		return fmt.Errorf("%w: guild %d: %w", errAccessCheck, a.guildID, err)
	}
	roles, err := a.api.Roles(a.ctx, a.guildID)
	if err != nil {
		return fmt.Errorf("%w: roles of guild %d: %w", errAccessCheck, a.guildID, err)
	}
	m, err := a.api.Member(a.ctx, a.guildID, a.userID)
	if err != nil && !discordio.NotFound(err) {
		return fmt.Errorf("%w: member %d: %w", errAccessCheck, a.userID, err)
	}
	a.ownerID, a.roles, a.member, a.loaded = g.OwnerID, roles, m, true
	return nil
}
