package discordtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// DefaultEveryonePermissions are the permissions AddGuild gives the
// @everyone role, those of a new Discord guild. Replace them with AddRole
// using the guild's ID as the role ID.
const DefaultEveryonePermissions = discord.PermissionCreateInstantInvite |
	discord.PermissionAddReactions |
	discord.PermissionStream |
	discord.PermissionViewChannel |
	discord.PermissionSendMessages |
	discord.PermissionEmbedLinks |
	discord.PermissionAttachFiles |
	discord.PermissionReadMessageHistory |
	discord.PermissionUseExternalEmojis |
	discord.PermissionConnect |
	discord.PermissionSpeak |
	discord.PermissionUseVAD |
	discord.PermissionChangeNickname |
	discord.PermissionUseApplicationCommands |
	discord.PermissionRequestToSpeak |
	discord.PermissionCreatePublicThreads |
	discord.PermissionCreatePrivateThreads |
	discord.PermissionUseExternalStickers |
	discord.PermissionSendMessagesInThreads |
	discord.PermissionUseEmbeddedActivities |
	discord.PermissionUseSoundboard |
	discord.PermissionUseExternalSounds |
	discord.PermissionSendVoiceMessages |
	discord.PermissionSendPolls |
	discord.PermissionUseExternalApps

// Guild is a guild of the model. AddGuild gives it an @everyone role (whose
// ID is the guild's) and makes the bot a member.
type Guild struct {
	// ID is the guild's ID; zero allocates one. The shard that receives the
	// guild's events is (ID >> 22) % shard_count.
	ID snowflake.ID
	// Name defaults to "guild-<id>".
	Name string
	// OwnerID is the owner's user ID, who holds every permission. Zero
	// allocates a user who is not a member.
	OwnerID snowflake.ID
	// Locale is the guild's preferred locale; defaults to en-US.
	Locale discord.Locale
	// Features are the guild's feature strings.
	Features []string
}

// Channel is a channel of a guild. Threads (types 10, 11, 12) take their
// permissions from their parent, as on Discord.
type Channel struct {
	// ID is the channel's ID; zero allocates one.
	ID snowflake.ID
	// GuildID is the guild the channel belongs to. It must exist.
	GuildID snowflake.ID
	// Type defaults to discord.ChannelTypeGuildText.
	Type discord.ChannelType
	// Name defaults to "channel-<id>".
	Name string
	// ParentID is the category of a channel, or the parent of a thread.
	ParentID snowflake.ID
	// Position orders the channel among its siblings.
	Position int
	// Topic is the channel topic.
	Topic string
	// NSFW marks an age-restricted channel.
	NSFW bool
	// Overwrites are the channel's permission overwrites.
	Overwrites []Overwrite
}

// Overwrite is a permission overwrite of a channel, for a role or a member.
type Overwrite struct {
	// ID is the role's or the member's ID; the @everyone overwrite has the
	// guild's ID.
	ID snowflake.ID
	// Type tells whether ID names a role or a member.
	Type discord.PermissionOverwriteType
	// Allow and Deny are the permissions granted and taken away.
	Allow, Deny discord.Permissions
}

// RoleOverwrite returns an overwrite for a role (use the guild ID for
// @everyone).
func RoleOverwrite(roleID snowflake.ID, allow, deny discord.Permissions) Overwrite {
	return Overwrite{ID: roleID, Type: discord.PermissionOverwriteTypeRole, Allow: allow, Deny: deny}
}

// MemberOverwrite returns an overwrite for a single member.
func MemberOverwrite(userID snowflake.ID, allow, deny discord.Permissions) Overwrite {
	return Overwrite{ID: userID, Type: discord.PermissionOverwriteTypeMember, Allow: allow, Deny: deny}
}

// Role is a role of a guild.
type Role struct {
	// ID is the role's ID; zero allocates one. The guild's ID names the
	// @everyone role.
	ID snowflake.ID
	// GuildID is the guild the role belongs to. It must exist.
	GuildID snowflake.ID
	// Name defaults to "role-<id>" ("@everyone" for the @everyone role).
	Name string
	// Permissions are the role's guild-wide permissions.
	Permissions discord.Permissions
	// Position orders roles; zero places a new role above the others.
	Position int
	// Color is the role's RGB color.
	Color int
	// Managed marks a role owned by an integration, such as a bot's role.
	Managed bool
}

// Member is a user's membership of a guild.
type Member struct {
	// GuildID is the guild; it must exist.
	GuildID snowflake.ID
	// UserID is the member's user ID; zero allocates one.
	UserID snowflake.ID
	// Username defaults to "user-<id>".
	Username string
	// GlobalName is the user's display name.
	GlobalName string
	// Nick is the member's nickname in the guild.
	Nick string
	// Roles are the member's role IDs, @everyone excluded; they must exist.
	Roles []snowflake.ID
	// Bot marks a bot user.
	Bot bool
	// JoinedAt defaults to the server's clock.
	JoinedAt time.Time
}

// Attachment is a file attached to a message.
type Attachment struct {
	// ID is the attachment's ID; zero allocates one.
	ID snowflake.ID
	// Filename is the file's name, such as "cat.png".
	Filename string
	// ContentType is the media type, such as "image/png". Discord leaves it
	// out when it cannot tell; so does the stand-in when it is empty.
	ContentType string
	// Size is the size in bytes; zero becomes 1024.
	Size int
	// URL defaults to a signed cdn.discordapp.com URL, as Discord's are.
	URL string
	// ProxyURL defaults to the media.discordapp.net twin of URL.
	ProxyURL string
	// Width and Height are set for images and videos.
	Width, Height int
}

// Message is a message in a channel: either added by a test with AddMessage,
// or sent by the bot through an interaction response, a followup or
// POST /channels/{id}/messages.
type Message struct {
	// ID is the message's ID; zero allocates one.
	ID snowflake.ID
	// ChannelID is the channel; it must exist.
	ChannelID snowflake.ID
	// GuildID is filled in from the channel.
	GuildID snowflake.ID
	// AuthorID is the author's user ID. Zero allocates a user.
	AuthorID snowflake.ID
	// Type defaults to discord.MessageTypeDefault.
	Type discord.MessageType
	// Content is the text of the message.
	Content string
	// Attachments are the files attached to the message.
	Attachments []Attachment
	// Embeds are the message's embeds: a link to an image gets an embed of
	// type "image" with a Thumbnail, a rich embed may carry an Image.
	Embeds []discord.Embed
	// Components are the message components as sent, raw.
	Components json.RawMessage
	// Mentions are the IDs of the users the message mentions. Mentioning the
	// bot makes the content visible to it without the message content intent.
	Mentions []snowflake.ID
	// Flags are the message flags.
	Flags discord.MessageFlags
	// AllowedMentions is the allowed_mentions a message the bot sent over
	// REST carried (POST /channels/{id}/messages), nil when absent.
	AllowedMentions *discord.AllowedMentions
	// Timestamp defaults to the time encoded in the ID.
	Timestamp time.Time
	// EditedAt is set when the message was edited.
	EditedAt time.Time
	// InteractionID is the interaction the message answers, if any.
	InteractionID snowflake.ID
	// Reactions are the message's reactions, in the order their emoji was
	// first added. AddReaction and RemoveReaction change them; AddMessage
	// takes them as given, as reactions made before the bot looked.
	Reactions []Reaction
}

// userInfo is what the model knows of a user.
type userInfo struct {
	ID         snowflake.ID
	Username   string
	GlobalName string
	Bot        bool
}

// guildState is a guild with its roles and members.
type guildState struct {
	Guild
	joinedAt    time.Time
	roles       map[snowflake.ID]*Role
	members     map[snowflake.ID]*Member
	roleOrder   []snowflake.ID
	memberOrder []snowflake.ID
	chanOrder   []snowflake.ID
}

// model is the in-memory Discord world. Its fields are guarded by
// Server.mu.
type model struct {
	guilds     map[snowflake.ID]*guildState
	guildOrder []snowflake.ID
	channels   map[snowflake.ID]*Channel
	messages   map[snowflake.ID]*Message
	users      map[snowflake.ID]*userInfo
}

func newModel() model {
	return model{
		guilds:   map[snowflake.ID]*guildState{},
		channels: map[snowflake.ID]*Channel{},
		messages: map[snowflake.ID]*Message{},
		users:    map[snowflake.ID]*userInfo{},
	}
}

// AddGuild adds a guild, or updates the name, owner, locale and features of
// an existing one. A new guild gets an @everyone role with
// DefaultEveryonePermissions and the bot as a member without roles. If the
// shard that owns the guild is connected, it receives GUILD_CREATE, as when
// a bot is added to a guild.
func (s *Server) AddGuild(g Guild) (Guild, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.clock()
	if g.ID == 0 {
		g.ID = s.newIDLocked(now)
	}
	if g.Name == "" {
		g.Name = "guild-" + g.ID.String()
	}
	if g.OwnerID == 0 {
		g.OwnerID = s.newIDLocked(now)
	}
	if g.Locale == "" {
		g.Locale = discord.LocaleEnglishUS
	}
	g.Features = slices.Clone(g.Features)
	s.ensureUserLocked(g.OwnerID)

	if gs, ok := s.guilds[g.ID]; ok {
		gs.Guild = g
		s.notifyLocked()
		return g, nil
	}
	gs := &guildState{
		Guild:    g,
		joinedAt: now,
		roles:    map[snowflake.ID]*Role{},
		members:  map[snowflake.ID]*Member{},
	}
	s.guilds[g.ID] = gs
	s.guildOrder = append(s.guildOrder, g.ID)
	gs.roles[g.ID] = &Role{ID: g.ID, GuildID: g.ID, Name: "@everyone", Permissions: DefaultEveryonePermissions}
	gs.roleOrder = append(gs.roleOrder, g.ID)
	gs.members[s.botUser.ID] = &Member{
		GuildID:  g.ID,
		UserID:   s.botUser.ID,
		Username: s.botUser.Username,
		Bot:      true,
		JoinedAt: now,
	}
	gs.memberOrder = append(gs.memberOrder, s.botUser.ID)
	s.dispatchGuildCreateLocked(gs)
	s.notifyLocked()
	return g, nil
}

// AddChannel adds a channel to an existing guild, or replaces the channel
// with the same ID.
func (s *Server) AddChannel(c Channel) (Channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gs, ok := s.guilds[c.GuildID]
	if !ok {
		return Channel{}, fmt.Errorf("%w %d", ErrUnknownGuild, c.GuildID)
	}
	switch c.Type {
	case discord.ChannelTypeGuildText, discord.ChannelTypeGuildVoice, discord.ChannelTypeGuildCategory,
		discord.ChannelTypeGuildNews, discord.ChannelTypeGuildNewsThread, discord.ChannelTypeGuildPublicThread,
		discord.ChannelTypeGuildPrivateThread, discord.ChannelTypeGuildStageVoice, discord.ChannelTypeGuildForum,
		discord.ChannelTypeGuildMedia:
	default:
		return Channel{}, fmt.Errorf("%w: channel type %d", ErrInvalid, c.Type)
	}
	if isThread(c.Type) {
		parent, ok := s.channels[c.ParentID]
		if !ok || parent.GuildID != c.GuildID {
			return Channel{}, fmt.Errorf("%w: thread parent %d", ErrUnknownChannel, c.ParentID)
		}
	}
	if c.ID == 0 {
		c.ID = s.newIDLocked(s.cfg.clock())
	}
	if c.Name == "" {
		c.Name = "channel-" + c.ID.String()
	}
	c.Overwrites = slices.Clone(c.Overwrites)
	if old, ok := s.channels[c.ID]; ok && old.GuildID != c.GuildID {
		return Channel{}, fmt.Errorf("%w: channel %d belongs to guild %d", ErrInvalid, c.ID, old.GuildID)
	}
	if _, ok := s.channels[c.ID]; !ok {
		gs.chanOrder = append(gs.chanOrder, c.ID)
	}
	stored := c
	s.channels[c.ID] = &stored
	s.notifyLocked()
	return c, nil
}

// AddRole adds a role to an existing guild, or replaces the role with the
// same ID. Use the guild's ID to replace the @everyone role.
func (s *Server) AddRole(r Role) (Role, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gs, ok := s.guilds[r.GuildID]
	if !ok {
		return Role{}, fmt.Errorf("%w %d", ErrUnknownGuild, r.GuildID)
	}
	if r.ID == 0 {
		r.ID = s.newIDLocked(s.cfg.clock())
	}
	if r.Name == "" {
		r.Name = "role-" + r.ID.String()
		if r.ID == r.GuildID {
			r.Name = "@everyone"
		}
	}
	if r.Position == 0 && r.ID != r.GuildID {
		r.Position = len(gs.roles)
	}
	if _, ok := gs.roles[r.ID]; !ok {
		gs.roleOrder = append(gs.roleOrder, r.ID)
	}
	stored := r
	gs.roles[r.ID] = &stored
	s.notifyLocked()
	return r, nil
}

// AddMember adds a member to an existing guild, or replaces the member with
// the same user ID. Adding the bot's user ID changes the bot's roles.
func (s *Server) AddMember(m Member) (Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gs, ok := s.guilds[m.GuildID]
	if !ok {
		return Member{}, fmt.Errorf("%w %d", ErrUnknownGuild, m.GuildID)
	}
	for _, id := range m.Roles {
		if _, ok := gs.roles[id]; !ok || id == m.GuildID {
			return Member{}, fmt.Errorf("%w %d in guild %d", ErrUnknownRole, id, m.GuildID)
		}
	}
	now := s.cfg.clock()
	if m.UserID == 0 {
		m.UserID = s.newIDLocked(now)
	}
	if m.UserID == s.botUser.ID {
		m.Username, m.Bot = s.botUser.Username, true
	}
	if m.Username == "" {
		if u, ok := s.users[m.UserID]; ok {
			m.Username = u.Username
		} else {
			m.Username = "user-" + m.UserID.String()
		}
	}
	if m.JoinedAt.IsZero() {
		m.JoinedAt = now
	}
	m.Roles = slices.Clone(m.Roles)
	if u, ok := s.users[m.UserID]; ok {
		u.Username, u.GlobalName, u.Bot = m.Username, m.GlobalName, m.Bot
	} else {
		s.users[m.UserID] = &userInfo{ID: m.UserID, Username: m.Username, GlobalName: m.GlobalName, Bot: m.Bot}
	}
	if _, ok := gs.members[m.UserID]; !ok {
		gs.memberOrder = append(gs.memberOrder, m.UserID)
	}
	stored := m
	gs.members[m.UserID] = &stored
	s.notifyLocked()
	return m, nil
}

// RemoveMember removes a member from a guild, as if the user left.
func (s *Server) RemoveMember(guildID, userID snowflake.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	gs, ok := s.guilds[guildID]
	if !ok {
		return fmt.Errorf("%w %d", ErrUnknownGuild, guildID)
	}
	if _, ok := gs.members[userID]; !ok {
		return fmt.Errorf("%w %d in guild %d", ErrUnknownMember, userID, guildID)
	}
	delete(gs.members, userID)
	gs.memberOrder = slices.DeleteFunc(gs.memberOrder, func(id snowflake.ID) bool { return id == userID })
	s.notifyLocked()
	return nil
}

// AddMessage adds a message to an existing channel, or replaces the message
// with the same ID. If the shard that owns the guild is connected and
// identified with the GUILD_MESSAGES intent, it receives MESSAGE_CREATE.
func (s *Server) AddMessage(m Message) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.channels[m.ChannelID]
	if !ok {
		return Message{}, fmt.Errorf("%w %d", ErrUnknownChannel, m.ChannelID)
	}
	now := s.cfg.clock()
	if m.ID == 0 {
		m.ID = s.newIDLocked(now)
	}
	if m.AuthorID == 0 {
		m.AuthorID = s.newIDLocked(now)
	}
	s.ensureUserLocked(m.AuthorID)
	m.GuildID = ch.GuildID
	if m.Timestamp.IsZero() {
		m.Timestamp = m.ID.Time()
	}
	m.Attachments = s.fillAttachmentsLocked(ch.ID, m.Attachments, now)
	m.Embeds = slices.Clone(m.Embeds)
	m.Mentions = slices.Clone(m.Mentions)
	m.Components = slices.Clone(m.Components)
	m.Reactions = cloneReactions(m.Reactions)
	stored := m
	s.messages[m.ID] = &stored
	s.dispatchMessageCreateLocked(&stored)
	s.notifyLocked()
	return cloneMessage(&stored), nil
}

// DeleteMessage removes a message, as if its author deleted it. A connected
// shard that asked for guild messages receives MESSAGE_DELETE.
func (s *Server) DeleteMessage(id snowflake.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return fmt.Errorf("%w %d", ErrUnknownMessage, id)
	}
	delete(s.messages, id)
	s.dispatchMessageDeleteLocked(m)
	s.notifyLocked()
	return nil
}

// Message returns a message of the model, including those the bot sent.
func (s *Server) Message(id snowflake.ID) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[id]
	if !ok {
		return Message{}, false
	}
	return cloneMessage(m), true
}

// Messages returns the messages of a channel, oldest first.
func (s *Server) Messages(channelID snowflake.ID) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.ChannelID == channelID {
			out = append(out, cloneMessage(m))
		}
	}
	slices.SortFunc(out, func(a, b Message) int { return compareIDs(a.ID, b.ID) })
	return out
}

// Permissions returns a member's permissions in a channel, computed from the
// guild owner, the roles and the channel's overwrites as Discord does. It is
// what interactions carry as member.permissions (and, for the bot,
// app_permissions).
func (s *Server) Permissions(channelID, userID snowflake.ID) (discord.Permissions, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.channels[channelID]
	if !ok {
		return 0, fmt.Errorf("%w %d", ErrUnknownChannel, channelID)
	}
	gs := s.guilds[ch.GuildID]
	m, ok := gs.members[userID]
	if !ok {
		return 0, fmt.Errorf("%w %d in guild %d", ErrUnknownMember, userID, ch.GuildID)
	}
	return s.channelPermissionsLocked(gs, ch, m), nil
}

// ensureUserLocked makes sure the model knows a user. The caller holds s.mu.
func (s *Server) ensureUserLocked(id snowflake.ID) *userInfo {
	if u, ok := s.users[id]; ok {
		return u
	}
	u := &userInfo{ID: id, Username: "user-" + id.String()}
	s.users[id] = u
	return u
}

// fillAttachmentsLocked gives attachments IDs, sizes and CDN URLs. The
// caller holds s.mu.
func (s *Server) fillAttachmentsLocked(channelID snowflake.ID, in []Attachment, now time.Time) []Attachment {
	out := slices.Clone(in)
	for i := range out {
		a := &out[i]
		if a.ID == 0 {
			a.ID = s.newIDLocked(now)
		}
		if a.Filename == "" {
			a.Filename = "file-" + a.ID.String()
		}
		if a.Size == 0 {
			a.Size = 1024
		}
		if a.URL == "" {
			a.URL = signURL(fmt.Sprintf("https://cdn.discordapp.com/attachments/%d/%d/%s", channelID, a.ID, a.Filename), now)
		}
		if a.ProxyURL == "" {
			a.ProxyURL = signURL(fmt.Sprintf("https://media.discordapp.net/attachments/%d/%d/%s", channelID, a.ID, a.Filename), now)
		}
	}
	return out
}

// resign returns url, a signed CDN URL, signed again at now; other URLs
// unchanged.
func resign(url string, now time.Time) string {
	base, query, ok := strings.Cut(url, "?")
	if !ok || !strings.HasPrefix(query, "ex=") ||
		!(strings.HasPrefix(base, "https://cdn.discordapp.com/") || strings.HasPrefix(base, "https://media.discordapp.net/")) {
		return url
	}
	return signURL(base, now)
}

// CDNExpiry returns the instant a signed CDN URL made by the stand-in
// expires (its ex parameter); ok is false for other URLs.
func CDNExpiry(url string) (time.Time, bool) {
	_, query, ok := strings.Cut(url, "?ex=")
	if !ok {
		return time.Time{}, false
	}
	hex, _, _ := strings.Cut(query, "&")
	sec, err := strconv.ParseInt(hex, 16, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}

// signURL returns base signed at now: with the ex (expiry, 24 hours
// on), is (issue) and hm (signature) query of a Discord CDN URL. The
// signature is a hash of base and now, so a URL signed twice at one
// instant reads the same.
func signURL(base string, now time.Time) string {
	sum := sha256.Sum256([]byte(base + "@" + strconv.FormatInt(now.Unix(), 10)))
	return base + "?ex=" + strconv.FormatInt(now.Add(24*time.Hour).Unix(), 16) +
		"&is=" + strconv.FormatInt(now.Unix(), 16) +
		"&hm=" + hex.EncodeToString(sum[:]) + "&"
}

// cloneMessage copies a message so callers cannot reach the model.
func cloneMessage(m *Message) Message {
	c := *m
	c.Attachments = slices.Clone(m.Attachments)
	c.Embeds = slices.Clone(m.Embeds)
	c.Mentions = slices.Clone(m.Mentions)
	c.Components = slices.Clone(m.Components)
	c.AllowedMentions = cloneAllowedMentions(m.AllowedMentions)
	c.Reactions = cloneReactions(m.Reactions)
	return c
}

// isThread reports whether a channel type is a thread.
func isThread(t discord.ChannelType) bool {
	switch t {
	case discord.ChannelTypeGuildNewsThread, discord.ChannelTypeGuildPublicThread, discord.ChannelTypeGuildPrivateThread:
		return true
	}
	return false
}

// compareIDs orders snowflakes.
func compareIDs(a, b snowflake.ID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// shardOf returns the shard that owns a guild, as Discord computes it.
func shardOf(guildID snowflake.ID, shardCount int) int {
	if shardCount < 1 {
		return 0
	}
	return int((uint64(guildID) >> 22) % uint64(shardCount))
}

// messageContentVisibleLocked reports whether the bot may read the content
// of m over REST or the gateway: with the message content intent, in DMs,
// for its own messages and for messages that mention it. The caller holds
// s.mu.
func (s *Server) messageContentVisibleLocked(m *Message, intents Intents, gatewayEvent bool) bool {
	if m.AuthorID == s.botUser.ID || slices.Contains(m.Mentions, s.botUser.ID) {
		return true
	}
	if !s.cfg.appFlags.Has(discord.ApplicationFlagGatewayMessageContent) &&
		!s.cfg.appFlags.Has(discord.ApplicationFlagGatewayMessageContentLimited) {
		return false
	}
	if gatewayEvent {
		return intents.Has(IntentMessageContent)
	}
	return true
}
