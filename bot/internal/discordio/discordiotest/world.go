package discordiotest

import (
	"fmt"
	"slices"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// DefaultEveryone are the permissions of a new guild's @everyone role, as
// Discord gives them.
const DefaultEveryone = discord.PermissionCreateInstantInvite |
	discord.PermissionChangeNickname |
	discord.PermissionViewChannel |
	discord.PermissionSendMessages |
	discord.PermissionSendMessagesInThreads |
	discord.PermissionCreatePublicThreads |
	discord.PermissionCreatePrivateThreads |
	discord.PermissionEmbedLinks |
	discord.PermissionAttachFiles |
	discord.PermissionAddReactions |
	discord.PermissionUseExternalEmojis |
	discord.PermissionReadMessageHistory |
	discord.PermissionUseApplicationCommands

// guild is a guild of the world, guarded by Fake.mu.
type guild struct {
	id      snowflake.ID
	name    string
	ownerID snowflake.ID
	roles   []discord.Role // @everyone first, then by creation
	members map[snowflake.ID]*member
}

// member is a user's membership of a guild.
type member struct {
	userID   snowflake.ID
	roleIDs  []snowflake.ID
	joinedAt time.Time
}

// channel is a guild text channel, a thread or a DM channel.
type channel struct {
	id         snowflake.ID
	typ        discord.ChannelType
	guildID    snowflake.ID // 0 for a DM
	name       string
	parentID   snowflake.ID // a thread's channel
	ownerID    snowflake.ID // a thread's creator
	overwrites []discord.PermissionOverwrite
	hidden     bool         // the bot cannot see it
	recipient  snowflake.ID // a DM's user
	createdAt  time.Time
}

func (c *channel) isThread() bool {
	return c.typ == discord.ChannelTypeGuildPublicThread || c.typ == discord.ChannelTypeGuildPrivateThread
}

// AddUser adds a user named name ("" names it after its ID) and returns
// its ID.
func (f *Fake) AddUser(name string) snowflake.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addUserLocked(name)
}

func (f *Fake) addUserLocked(name string) snowflake.ID {
	id := f.newIDLocked()
	if name == "" {
		name = "user" + id.String()
	}
	f.users[id] = &discord.User{ID: id, Username: name, Discriminator: "0"}
	return id
}

// AddGuild adds a guild: its @everyone role (whose ID is the guild's) has
// DefaultEveryone, its owner is a new user, and the owner and the bot are
// members with no other role. It returns the guild's ID.
func (f *Fake) AddGuild(name string) snowflake.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.newIDLocked()
	if name == "" {
		name = "guild" + id.String()
	}
	g := &guild{id: id, name: name, members: make(map[snowflake.ID]*member)}
	g.roles = []discord.Role{{ID: id, GuildID: id, Name: "@everyone", Permissions: DefaultEveryone}}
	f.guilds[id] = g
	g.ownerID = f.addUserLocked("")
	now := f.nowLocked()
	g.members[g.ownerID] = &member{userID: g.ownerID, joinedAt: now}
	g.members[f.botID] = &member{userID: f.botID, joinedAt: now}
	return id
}

// Owner is a guild's owner.
func (f *Fake) Owner(guildID snowflake.ID) snowflake.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.guildLocked("Owner", guildID).ownerID
}

// SetOwner makes a user, made a member if need be, the guild's owner.
func (f *Fake) SetOwner(guildID, userID snowflake.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.guildLocked("SetOwner", guildID)
	f.userLocked("SetOwner", userID)
	if g.members[userID] == nil {
		g.members[userID] = &member{userID: userID, joinedAt: f.nowLocked()}
	}
	g.ownerID = userID
}

// AddRole adds a role with perms to a guild and returns its ID.
func (f *Fake) AddRole(guildID snowflake.ID, perms discord.Permissions) snowflake.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.guildLocked("AddRole", guildID)
	id := f.newIDLocked()
	g.roles = append(g.roles, discord.Role{ID: id, GuildID: g.id, Name: "role" + id.String(), Position: len(g.roles), Permissions: perms})
	return id
}

// SetRolePermissions sets a role's permissions; the @everyone role's ID is
// its guild's.
func (f *Fake) SetRolePermissions(roleID snowflake.ID, perms discord.Permissions) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, g := range f.guilds {
		for i := range g.roles {
			if g.roles[i].ID == roleID {
				g.roles[i].Permissions = perms
				return
			}
		}
	}
	f.fatalf("SetRolePermissions: unknown role %d", roleID)
}

// AddMember makes a user a member of a guild with roles, replacing the
// roles of a member already there; a zero userID is a new user. It
// returns the user's ID.
func (f *Fake) AddMember(guildID, userID snowflake.ID, roleIDs ...snowflake.ID) snowflake.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.guildLocked("AddMember", guildID)
	if userID == 0 {
		userID = f.addUserLocked("")
	}
	f.userLocked("AddMember", userID)
	for _, r := range roleIDs {
		if !slices.ContainsFunc(g.roles, func(role discord.Role) bool { return role.ID == r && r != g.id }) {
			f.fatalf("AddMember: role %d is not one of guild %d's (@everyone is implied)", r, g.id)
		}
	}
	m := g.members[userID]
	if m == nil {
		m = &member{userID: userID, joinedAt: f.nowLocked()}
		g.members[userID] = m
	}
	m.roleIDs = slices.Clone(roleIDs)
	return userID
}

// RemoveMember makes a user leave a guild.
func (f *Fake) RemoveMember(guildID, userID snowflake.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.guildLocked("RemoveMember", guildID).members, userID)
}

// AddChannel adds a text channel to a guild, with permission overwrites
// (discord.RolePermissionOverwrite, discord.MemberPermissionOverwrite),
// and returns its ID.
func (f *Fake) AddChannel(guildID snowflake.ID, overwrites ...discord.PermissionOverwrite) snowflake.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.guildLocked("AddChannel", guildID)
	id := f.newIDLocked()
	f.channels[id] = &channel{
		id: id, typ: discord.ChannelTypeGuildText, guildID: g.id, name: "channel" + id.String(),
		overwrites: slices.Clone(overwrites), createdAt: f.nowLocked(),
	}
	return id
}

// AddThread adds a thread, public or private, to a guild text channel and
// returns its ID. A thread takes its channel's permissions.
func (f *Fake) AddThread(parentID snowflake.ID, private bool) snowflake.ID {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.channelLocked("AddThread", parentID)
	if p.typ != discord.ChannelTypeGuildText {
		f.fatalf("AddThread: channel %d is not a guild text channel", parentID)
	}
	typ := discord.ChannelTypeGuildPublicThread
	if private {
		typ = discord.ChannelTypeGuildPrivateThread
	}
	id := f.newIDLocked()
	f.channels[id] = &channel{
		id: id, typ: typ, guildID: p.guildID, name: "thread" + id.String(), parentID: p.id,
		ownerID: f.guilds[p.guildID].ownerID, createdAt: f.nowLocked(),
	}
	return id
}

// SetOverwrites replaces a guild channel's permission overwrites.
func (f *Fake) SetOverwrites(channelID snowflake.ID, overwrites ...discord.PermissionOverwrite) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.channelLocked("SetOverwrites", channelID).overwrites = slices.Clone(overwrites)
}

// SetHidden sets whether the bot can see a channel: a hidden channel's
// reads and sends answer 403 Missing Access (50001), and interactions in
// it carry no app permission.
func (f *Fake) SetHidden(channelID snowflake.ID, hidden bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.channelLocked("SetHidden", channelID).hidden = hidden
}

// SetDMsClosed sets whether a user refuses the bot's direct messages:
// then sends to their DM channel answer 403 (50007).
func (f *Fake) SetDMsClosed(userID snowflake.ID, closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.userLocked("SetDMsClosed", userID)
	f.dmsClosed[userID] = closed
}

// AddMessage adds a message to a channel, as it would be fetched, and
// returns it. The Fake fills in its ID, channel, guild and time, an
// author (a new user) when m has none, and an ID, a file name and URLs for
// each attachment that lacks them.
func (f *Fake) AddMessage(channelID snowflake.ID, m discord.Message) discord.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := f.channelLocked("AddMessage", channelID)
	if m.ID == 0 {
		m.ID = f.newIDLocked()
	} else if _, ok := f.messages[m.ID]; ok {
		f.fatalf("AddMessage: message %d exists", m.ID)
	}
	if m.Author.ID == 0 {
		m.Author = *f.users[f.addUserLocked("")]
	}
	f.storeMessageLocked(ch, &m)
	c, err := cloneMessage(&m)
	if err != nil {
		f.fatalf("AddMessage: %v", err)
	}
	return c
}

// DeleteMessage deletes a message: it is then unknown.
func (f *Fake) DeleteMessage(messageID snowflake.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.messages, messageID)
}

// storeMessageLocked places m in ch, at the Fake's time if m has none.
func (f *Fake) storeMessageLocked(ch *channel, m *discord.Message) {
	m.ChannelID = ch.id
	m.GuildID = nil
	if ch.guildID != 0 {
		m.GuildID = ptr(ch.guildID)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = f.nowLocked()
	}
	f.fillAttachmentsLocked(m)
	f.messages[m.ID] = m
}

// fillAttachmentsLocked gives each attachment of m without an ID an ID, a
// file name and CDN URLs.
func (f *Fake) fillAttachmentsLocked(m *discord.Message) {
	for i := range m.Attachments {
		a := &m.Attachments[i]
		if a.ID == 0 {
			a.ID = f.newIDLocked()
		}
		if a.Filename == "" {
			a.Filename = "image.png"
		}
		if a.URL == "" {
			a.URL = fmt.Sprintf("https://cdn.discordapp.com/attachments/%d/%d/%s", m.ChannelID, a.ID, a.Filename)
		}
		if a.ProxyURL == "" {
			a.ProxyURL = fmt.Sprintf("https://media.discordapp.net/attachments/%d/%d/%s", m.ChannelID, a.ID, a.Filename)
		}
	}
}

func (f *Fake) guildLocked(op string, id snowflake.ID) *guild {
	g := f.guilds[id]
	if g == nil {
		f.fatalf("%s: unknown guild %d", op, id)
	}
	return g
}

func (f *Fake) channelLocked(op string, id snowflake.ID) *channel {
	c := f.channels[id]
	if c == nil {
		f.fatalf("%s: unknown channel %d", op, id)
	}
	return c
}

func (f *Fake) userLocked(op string, id snowflake.ID) *discord.User {
	u := f.users[id]
	if u == nil {
		f.fatalf("%s: unknown user %d", op, id)
	}
	return u
}

// permissionsLocked computes a member's permissions in a guild channel as
// Discord does: everything for the owner and for ADMINISTRATOR; else
// @everyone and the member's roles, then the channel's @everyone
// overwrite, its role overwrites together, the member's own overwrite. A
// thread takes its channel's overwrites. Without VIEW_CHANNEL nothing is
// left. A user who is not a member has no permission.
func (f *Fake) permissionsLocked(g *guild, ch *channel, userID snowflake.ID) discord.Permissions {
	m := g.members[userID]
	if m == nil {
		return discord.PermissionsNone
	}
	if userID == g.ownerID {
		return discord.PermissionsAll
	}
	var perms discord.Permissions
	for _, r := range g.roles {
		if r.ID == g.id || slices.Contains(m.roleIDs, r.ID) {
			perms |= r.Permissions
		}
	}
	if perms.Has(discord.PermissionAdministrator) {
		return discord.PermissionsAll
	}
	src := ch
	if ch.isThread() {
		src = f.channels[ch.parentID]
	}
	var allow, deny discord.Permissions
	var own *discord.MemberPermissionOverwrite
	for _, o := range src.overwrites {
		switch o := o.(type) {
		case discord.RolePermissionOverwrite:
			if o.RoleID == g.id {
				perms = perms&^o.Deny | o.Allow
			} else if slices.Contains(m.roleIDs, o.RoleID) {
				allow |= o.Allow
				deny |= o.Deny
			}
		case discord.MemberPermissionOverwrite:
			if o.UserID == userID {
				own = &o
			}
		}
	}
	perms = perms&^deny | allow
	if own != nil {
		perms = perms&^own.Deny | own.Allow
	}
	if !perms.Has(discord.PermissionViewChannel) {
		return discord.PermissionsNone
	}
	return perms
}

func ptr[T any](v T) *T { return &v }
