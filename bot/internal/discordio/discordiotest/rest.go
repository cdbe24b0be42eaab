package discordiotest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// Message fetches a message: 404 Unknown Channel (10003) for a channel
// that does not exist, 403 Missing Access (50001) for one the bot cannot
// see, 404 Unknown Message (10008) for a message not in the channel, or
// ephemeral.
func (f *Fake) Message(ctx context.Context, channelID, messageID snowflake.ID) (*discord.Message, error) {
	var out *discord.Message
	err := f.call(ctx, OpMessage, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, err := f.visibleLocked(channelID); err != nil {
			return err
		}
		m := f.messages[messageID]
		if m == nil || m.ChannelID != channelID || m.Flags.Has(discord.MessageFlagEphemeral) {
			return unknownMessage()
		}
		c, err := cloneMessage(m)
		out = &c
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Channel fetches a channel or thread: 404 Unknown Channel (10003), or 403
// Missing Access (50001) for one the bot cannot see.
func (f *Fake) Channel(ctx context.Context, channelID snowflake.ID) (discord.Channel, error) {
	var out discord.Channel
	err := f.call(ctx, OpChannel, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		ch, err := f.visibleLocked(channelID)
		if err != nil {
			return err
		}
		out, err = decodeChannel(f.wireChannelLocked(ch, nil))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// visibleLocked finds a channel the bot may see.
func (f *Fake) visibleLocked(channelID snowflake.ID) (*channel, error) {
	ch := f.channels[channelID]
	switch {
	case ch == nil:
		return nil, unknownChannel()
	case ch.hidden:
		return nil, missingAccess()
	}
	return ch, nil
}

// Guild fetches a guild with its roles: 404 Unknown Guild (10004).
func (f *Fake) Guild(ctx context.Context, guildID snowflake.ID) (*discord.RestGuild, error) {
	var out *discord.RestGuild
	err := f.call(ctx, OpGuild, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		g := f.guilds[guildID]
		if g == nil {
			return unknownGuild()
		}
		out = &discord.RestGuild{
			Guild: discord.Guild{ID: g.id, Name: g.name, OwnerID: g.ownerID, PreferredLocale: string(discord.LocaleEnglishUS)},
			Roles: slices.Clone(g.roles),
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Roles fetches a guild's roles, @everyone first: 404 Unknown Guild
// (10004).
func (f *Fake) Roles(ctx context.Context, guildID snowflake.ID) ([]discord.Role, error) {
	var out []discord.Role
	err := f.call(ctx, OpRoles, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		g := f.guilds[guildID]
		if g == nil {
			return unknownGuild()
		}
		out = slices.Clone(g.roles)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Member fetches a guild's member: 404 Unknown Guild (10004) or Unknown
// Member (10007).
func (f *Fake) Member(ctx context.Context, guildID, userID snowflake.ID) (*discord.Member, error) {
	var out *discord.Member
	err := f.call(ctx, OpMember, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		g := f.guilds[guildID]
		if g == nil {
			return unknownGuild()
		}
		m := g.members[userID]
		if m == nil {
			return unknownMember()
		}
		w := f.wireMemberLocked(m, nil)
		return roundTrip(w, &out)
	})
	if err != nil {
		return nil, err
	}
	out.GuildID = guildID
	return out, nil
}

// OpenDM returns the bot's DM channel with a user, the same one each
// time; a user the Fake does not know, or the bot, is 400 Invalid
// Recipient(s) (50033). Closed DMs refuse only the messages (Send).
func (f *Fake) OpenDM(ctx context.Context, userID snowflake.ID) (snowflake.ID, error) {
	var out snowflake.ID
	err := f.call(ctx, OpOpenDM, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.users[userID] == nil || userID == f.botID {
			return refusal(http.StatusBadRequest, codeInvalidRecipient, "Invalid Recipient(s)")
		}
		out = f.dmLocked(userID)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return out, nil
}

// dmLocked returns the DM channel with a user, made on first use.
func (f *Fake) dmLocked(userID snowflake.ID) snowflake.ID {
	if id, ok := f.dmOf[userID]; ok {
		return id
	}
	id := f.newIDLocked()
	f.channels[id] = &channel{id: id, typ: discord.ChannelTypeDM, recipient: userID, createdAt: f.nowLocked()}
	f.dmOf[userID] = id
	return id
}

// Send sends a message to a channel: 404 Unknown Channel (10003); 403
// Cannot send messages to this user (50007) to the DM of a user who closed
// them; 403 Missing Access (50001) to a channel the bot cannot see, 403
// Missing Permissions (50013) where it may not send; 400 for an empty or
// oversized message.
func (f *Fake) Send(ctx context.Context, channelID snowflake.ID, m discord.MessageCreate) error {
	return f.call(ctx, OpSend, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		ch := f.channels[channelID]
		if ch == nil {
			return unknownChannel()
		}
		if ch.typ == discord.ChannelTypeDM {
			if f.dmsClosed[ch.recipient] {
				return refusal(http.StatusForbidden, discordio.CodeCannotDM, "Cannot send messages to this user")
			}
		} else {
			if ch.hidden {
				return missingAccess()
			}
			need := discord.PermissionViewChannel | discord.PermissionSendMessages
			if ch.isThread() {
				need = discord.PermissionViewChannel | discord.PermissionSendMessagesInThreads
			}
			if !f.permissionsLocked(f.guilds[ch.guildID], ch, f.botID).Has(need) {
				return refusal(http.StatusForbidden, codeMissingPermissions, "Missing Permissions")
			}
		}
		msg, err := fromCreate(m)
		if err != nil {
			return err
		}
		msg.ID = f.newIDLocked()
		msg.Author = *f.users[f.botID]
		f.storeMessageLocked(ch, &msg)
		f.sent[channelID] = append(f.sent[channelID], m)
		return nil
	})
}

// commandKey names a command: names are unique per type.
type commandKey struct {
	name string
	typ  discord.ApplicationCommandType
}

// SetCommands replaces the application's global commands and returns
// their count. A command keeps its ID across overwrites, and interactions
// the builders make for it carry that ID.
func (f *Fake) SetCommands(ctx context.Context, cmds []discord.ApplicationCommandCreate) (int, error) {
	var n int
	err := f.call(ctx, OpSetCommands, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		ids := make(map[commandKey]snowflake.ID, len(cmds))
		for _, c := range cmds {
			k := commandKey{c.CommandName(), c.Type()}
			if _, dup := ids[k]; dup {
				return invalidForm("APPLICATION_COMMANDS_DUPLICATE_NAME: " + k.name)
			}
			id, ok := f.cmdIDs[k]
			if !ok {
				id = f.newIDLocked()
			}
			ids[k] = id
		}
		f.cmdIDs = ids
		f.commands = slices.Clone(cmds)
		n = len(cmds)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// GatewayBot answers with the GatewayInfo of WithGateway (by default one
// shard at wss://gateway.discord.gg, one identify at a time).
func (f *Fake) GatewayBot(ctx context.Context) (discordio.GatewayInfo, error) {
	var out discordio.GatewayInfo
	err := f.call(ctx, OpGatewayBot, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		out = f.gateway
		return nil
	})
	if err != nil {
		return discordio.GatewayInfo{}, err
	}
	return out, nil
}

// Sent are the messages Send delivered to a channel, in order, as the bot
// sent them.
func (f *Fake) Sent(channelID snowflake.ID) []discord.MessageCreate {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent[channelID])
}

// DMs are the messages Send delivered to a user's DM channel, in order.
func (f *Fake) DMs(userID snowflake.ID) []discord.MessageCreate {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.dmOf[userID]
	if !ok {
		return nil
	}
	return slices.Clone(f.sent[id])
}

// Commands are the commands of the last SetCommands.
func (f *Fake) Commands() []discord.ApplicationCommandCreate {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.commands)
}

// wireChannel is a channel as Discord sends it; Permissions only in an
// interaction.
type wireChannel struct {
	ID                   snowflake.ID                  `json:"id"`
	Type                 discord.ChannelType           `json:"type"`
	GuildID              *snowflake.ID                 `json:"guild_id,omitempty"`
	Name                 string                        `json:"name,omitempty"`
	Position             int                           `json:"position"`
	PermissionOverwrites []discord.PermissionOverwrite `json:"permission_overwrites,omitempty"`
	ParentID             *snowflake.ID                 `json:"parent_id,omitempty"`
	OwnerID              *snowflake.ID                 `json:"owner_id,omitempty"`
	ThreadMetadata       *discord.ThreadMetadata       `json:"thread_metadata,omitempty"`
	Recipients           []discord.User                `json:"recipients,omitempty"`
	Permissions          *discord.Permissions          `json:"permissions,omitempty"`
}

func (f *Fake) wireChannelLocked(ch *channel, perms *discord.Permissions) wireChannel {
	w := wireChannel{ID: ch.id, Type: ch.typ, Name: ch.name, Permissions: perms}
	switch {
	case ch.typ == discord.ChannelTypeDM:
		w.Recipients = []discord.User{*f.users[ch.recipient]}
	case ch.isThread():
		w.GuildID, w.ParentID, w.OwnerID = ptr(ch.guildID), ptr(ch.parentID), ptr(ch.ownerID)
		w.ThreadMetadata = &discord.ThreadMetadata{
			AutoArchiveDuration: discord.AutoArchiveDuration24h,
			ArchiveTimestamp:    ch.createdAt,
			CreateTimestamp:     ch.createdAt,
			Invitable:           ch.typ == discord.ChannelTypeGuildPrivateThread,
		}
	default:
		w.GuildID = ptr(ch.guildID)
		w.PermissionOverwrites = ch.overwrites
		if w.PermissionOverwrites == nil {
			w.PermissionOverwrites = []discord.PermissionOverwrite{}
		}
	}
	return w
}

func decodeChannel(w wireChannel) (discord.Channel, error) {
	b, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	var u discord.UnmarshalChannel
	if err := json.Unmarshal(b, &u); err != nil {
		return nil, err
	}
	return u.Channel, nil
}

// wireMember is a guild member as Discord sends it; Permissions only in
// an interaction.
type wireMember struct {
	User        discord.User         `json:"user"`
	Roles       []snowflake.ID       `json:"roles"`
	JoinedAt    time.Time            `json:"joined_at"`
	Deaf        bool                 `json:"deaf"`
	Mute        bool                 `json:"mute"`
	Flags       int                  `json:"flags"`
	Pending     bool                 `json:"pending"`
	Permissions *discord.Permissions `json:"permissions,omitempty"`
}

func (f *Fake) wireMemberLocked(m *member, perms *discord.Permissions) wireMember {
	roles := m.roleIDs
	if roles == nil {
		roles = []snowflake.ID{}
	}
	return wireMember{User: *f.users[m.userID], Roles: roles, JoinedAt: m.joinedAt, Permissions: perms}
}
