package discordtest

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// The wire* types are the JSON shapes Discord sends, field for field as the
// API reference documents them (the fields the stand-in can fill).

type wireUser struct {
	ID            snowflake.ID `json:"id"`
	Username      string       `json:"username"`
	Discriminator string       `json:"discriminator"`
	GlobalName    *string      `json:"global_name"`
	Avatar        *string      `json:"avatar"`
	Bot           bool         `json:"bot,omitempty"`
	PublicFlags   int          `json:"public_flags"`
}

type wireSelfUser struct {
	wireUser
	Verified   bool    `json:"verified"`
	MFAEnabled bool    `json:"mfa_enabled"`
	Flags      int     `json:"flags"`
	Locale     string  `json:"locale,omitempty"`
	Email      *string `json:"email"`
}

type wireMember struct {
	User                       *wireUser      `json:"user,omitempty"`
	Nick                       *string        `json:"nick"`
	Avatar                     *string        `json:"avatar"`
	Roles                      []snowflake.ID `json:"roles"`
	JoinedAt                   time.Time      `json:"joined_at"`
	PremiumSince               *time.Time     `json:"premium_since"`
	Deaf                       bool           `json:"deaf"`
	Mute                       bool           `json:"mute"`
	Flags                      int            `json:"flags"`
	Pending                    bool           `json:"pending"`
	CommunicationDisabledUntil *time.Time     `json:"communication_disabled_until"`
	Permissions                *string        `json:"permissions,omitempty"`
}

type wireRoleColors struct {
	PrimaryColor   int  `json:"primary_color"`
	SecondaryColor *int `json:"secondary_color"`
	TertiaryColor  *int `json:"tertiary_color"`
}

type wireRole struct {
	ID           snowflake.ID   `json:"id"`
	Name         string         `json:"name"`
	Color        int            `json:"color"`
	Colors       wireRoleColors `json:"colors"`
	Hoist        bool           `json:"hoist"`
	Icon         *string        `json:"icon"`
	UnicodeEmoji *string        `json:"unicode_emoji"`
	Position     int            `json:"position"`
	Permissions  string         `json:"permissions"`
	Managed      bool           `json:"managed"`
	Mentionable  bool           `json:"mentionable"`
	Flags        int            `json:"flags"`
}

type wireOverwrite struct {
	ID    snowflake.ID `json:"id"`
	Type  int          `json:"type"`
	Allow string       `json:"allow"`
	Deny  string       `json:"deny"`
}

type wireThreadMetadata struct {
	Archived            bool      `json:"archived"`
	AutoArchiveDuration int       `json:"auto_archive_duration"`
	ArchiveTimestamp    time.Time `json:"archive_timestamp"`
	Locked              bool      `json:"locked"`
	Invitable           *bool     `json:"invitable,omitempty"`
}

type wireChannel struct {
	ID                   snowflake.ID        `json:"id"`
	Type                 discord.ChannelType `json:"type"`
	GuildID              *snowflake.ID       `json:"guild_id,omitempty"`
	Name                 string              `json:"name"`
	Position             *int                `json:"position,omitempty"`
	PermissionOverwrites []wireOverwrite     `json:"permission_overwrites,omitempty"`
	ParentID             *snowflake.ID       `json:"parent_id"`
	Topic                *string             `json:"topic,omitempty"`
	NSFW                 bool                `json:"nsfw"`
	LastMessageID        *snowflake.ID       `json:"last_message_id,omitempty"`
	RateLimitPerUser     int                 `json:"rate_limit_per_user"`
	Flags                int                 `json:"flags"`
	Bitrate              *int                `json:"bitrate,omitempty"`
	UserLimit            *int                `json:"user_limit,omitempty"`
	OwnerID              *snowflake.ID       `json:"owner_id,omitempty"`
	ThreadMetadata       *wireThreadMetadata `json:"thread_metadata,omitempty"`
	MessageCount         *int                `json:"message_count,omitempty"`
	MemberCount          *int                `json:"member_count,omitempty"`
	AvailableTags        []json.RawMessage   `json:"available_tags,omitempty"`
	Permissions          *string             `json:"permissions,omitempty"`
}

type wireAttachment struct {
	ID          snowflake.ID `json:"id"`
	Filename    string       `json:"filename"`
	Size        int          `json:"size"`
	URL         string       `json:"url"`
	ProxyURL    string       `json:"proxy_url"`
	ContentType string       `json:"content_type,omitempty"`
	Width       *int         `json:"width,omitempty"`
	Height      *int         `json:"height,omitempty"`
	Ephemeral   bool         `json:"ephemeral,omitempty"`
}

type wireInteractionMetadata struct {
	ID                           snowflake.ID            `json:"id"`
	Type                         discord.InteractionType `json:"type"`
	User                         wireUser                `json:"user"`
	AuthorizingIntegrationOwners map[string]snowflake.ID `json:"authorizing_integration_owners"`
	OriginalResponseMessageID    *snowflake.ID           `json:"original_response_message_id,omitempty"`
	TargetMessageID              *snowflake.ID           `json:"target_message_id,omitempty"`
	InteractedMessageID          *snowflake.ID           `json:"interacted_message_id,omitempty"`
}

type wireMessage struct {
	ID                  snowflake.ID             `json:"id"`
	Type                discord.MessageType      `json:"type"`
	ChannelID           snowflake.ID             `json:"channel_id"`
	GuildID             *snowflake.ID            `json:"guild_id,omitempty"`
	Author              wireUser                 `json:"author"`
	Member              *wireMember              `json:"member,omitempty"`
	Content             string                   `json:"content"`
	Timestamp           time.Time                `json:"timestamp"`
	EditedTimestamp     *time.Time               `json:"edited_timestamp"`
	TTS                 bool                     `json:"tts"`
	MentionEveryone     bool                     `json:"mention_everyone"`
	Mentions            []wireUser               `json:"mentions"`
	MentionRoles        []snowflake.ID           `json:"mention_roles"`
	Attachments         []wireAttachment         `json:"attachments"`
	Embeds              []discord.Embed          `json:"embeds"`
	Components          json.RawMessage          `json:"components"`
	Pinned              bool                     `json:"pinned"`
	Flags               discord.MessageFlags     `json:"flags"`
	WebhookID           *snowflake.ID            `json:"webhook_id,omitempty"`
	ApplicationID       *snowflake.ID            `json:"application_id,omitempty"`
	InteractionMetadata *wireInteractionMetadata `json:"interaction_metadata,omitempty"`
	Reactions           []wireReaction           `json:"reactions,omitempty"`
}

type wireGuild struct {
	ID                          snowflake.ID      `json:"id"`
	Name                        string            `json:"name"`
	Icon                        *string           `json:"icon"`
	Splash                      *string           `json:"splash"`
	DiscoverySplash             *string           `json:"discovery_splash"`
	OwnerID                     snowflake.ID      `json:"owner_id"`
	AFKChannelID                *snowflake.ID     `json:"afk_channel_id"`
	AFKTimeout                  int               `json:"afk_timeout"`
	VerificationLevel           int               `json:"verification_level"`
	DefaultMessageNotifications int               `json:"default_message_notifications"`
	ExplicitContentFilter       int               `json:"explicit_content_filter"`
	Roles                       []wireRole        `json:"roles"`
	Emojis                      []json.RawMessage `json:"emojis"`
	Stickers                    []json.RawMessage `json:"stickers"`
	Features                    []string          `json:"features"`
	MFALevel                    int               `json:"mfa_level"`
	ApplicationID               *snowflake.ID     `json:"application_id"`
	SystemChannelID             *snowflake.ID     `json:"system_channel_id"`
	SystemChannelFlags          int               `json:"system_channel_flags"`
	RulesChannelID              *snowflake.ID     `json:"rules_channel_id"`
	VanityURLCode               *string           `json:"vanity_url_code"`
	Description                 *string           `json:"description"`
	Banner                      *string           `json:"banner"`
	PremiumTier                 int               `json:"premium_tier"`
	PremiumSubscriptionCount    int               `json:"premium_subscription_count"`
	PreferredLocale             discord.Locale    `json:"preferred_locale"`
	PublicUpdatesChannelID      *snowflake.ID     `json:"public_updates_channel_id"`
	NSFWLevel                   int               `json:"nsfw_level"`
	PremiumProgressBarEnabled   bool              `json:"premium_progress_bar_enabled"`
	SafetyAlertsChannelID       *snowflake.ID     `json:"safety_alerts_channel_id"`
}

type wireGatewayGuild struct {
	wireGuild
	JoinedAt             time.Time         `json:"joined_at"`
	Large                bool              `json:"large"`
	Unavailable          bool              `json:"unavailable"`
	MemberCount          int               `json:"member_count"`
	VoiceStates          []json.RawMessage `json:"voice_states"`
	Members              []wireMember      `json:"members"`
	Channels             []wireChannel     `json:"channels"`
	Threads              []wireChannel     `json:"threads"`
	Presences            []json.RawMessage `json:"presences"`
	StageInstances       []json.RawMessage `json:"stage_instances"`
	GuildScheduledEvents []json.RawMessage `json:"guild_scheduled_events"`
	SoundboardSounds     []json.RawMessage `json:"soundboard_sounds"`
}

type apiError struct {
	Message string          `json:"message"`
	Code    int             `json:"code"`
	Errors  json.RawMessage `json:"errors,omitempty"`
}

// permString formats permissions as Discord does: a decimal string.
func permString(p discord.Permissions) string {
	return strconv.FormatInt(int64(p), 10)
}

func ptr[T any](v T) *T { return &v }

func (u *userInfo) wire() wireUser {
	w := wireUser{ID: u.ID, Username: u.Username, Discriminator: "0", Bot: u.Bot}
	if u.GlobalName != "" {
		w.GlobalName = ptr(u.GlobalName)
	}
	if u.Bot {
		w.Discriminator = "0000"
	}
	return w
}

// wireUserLocked returns a user's JSON. The caller holds s.mu.
func (s *Server) wireUserLocked(id snowflake.ID) wireUser {
	return s.ensureUserLocked(id).wire()
}

// wireMemberLocked returns a member's JSON, with its user when withUser.
// The caller holds s.mu.
func (s *Server) wireMemberLocked(m *Member, withUser bool) wireMember {
	w := wireMember{Roles: m.Roles, JoinedAt: m.JoinedAt}
	if w.Roles == nil {
		w.Roles = []snowflake.ID{}
	}
	if m.Nick != "" {
		w.Nick = ptr(m.Nick)
	}
	if withUser {
		u := s.wireUserLocked(m.UserID)
		w.User = &u
	}
	return w
}

func (r *Role) wire() wireRole {
	return wireRole{
		ID:          r.ID,
		Name:        r.Name,
		Color:       r.Color,
		Colors:      wireRoleColors{PrimaryColor: r.Color},
		Position:    r.Position,
		Permissions: permString(r.Permissions),
		Managed:     r.Managed,
	}
}

// wireChannelLocked returns a channel's JSON; perms, when not nil, is the
// permissions field interactions carry. The caller holds s.mu.
func (s *Server) wireChannelLocked(c *Channel, perms *discord.Permissions) wireChannel {
	w := wireChannel{
		ID:      c.ID,
		Type:    c.Type,
		GuildID: ptr(c.GuildID),
		Name:    c.Name,
		NSFW:    c.NSFW,
	}
	if c.ParentID != 0 {
		w.ParentID = ptr(c.ParentID)
	}
	if isThread(c.Type) {
		owner := s.botUser.ID
		w.OwnerID = &owner
		w.ThreadMetadata = &wireThreadMetadata{AutoArchiveDuration: 1440, ArchiveTimestamp: c.ID.Time()}
		w.MessageCount, w.MemberCount = ptr(0), ptr(1)
	} else {
		w.Position = ptr(c.Position)
		w.PermissionOverwrites = make([]wireOverwrite, 0, len(c.Overwrites))
		for _, o := range c.Overwrites {
			w.PermissionOverwrites = append(w.PermissionOverwrites, wireOverwrite{
				ID: o.ID, Type: int(o.Type), Allow: permString(o.Allow), Deny: permString(o.Deny),
			})
		}
	}
	switch c.Type {
	case discord.ChannelTypeGuildText, discord.ChannelTypeGuildNews, discord.ChannelTypeGuildForum, discord.ChannelTypeGuildMedia:
		w.Topic = ptr(c.Topic)
	case discord.ChannelTypeGuildVoice, discord.ChannelTypeGuildStageVoice:
		w.Bitrate, w.UserLimit = ptr(64000), ptr(0)
	}
	if c.Type == discord.ChannelTypeGuildForum || c.Type == discord.ChannelTypeGuildMedia {
		w.AvailableTags = []json.RawMessage{}
	}
	if perms != nil {
		w.Permissions = ptr(permString(*perms))
	}
	return w
}

// wireMessageLocked returns a message's JSON. Without content access the
// content, attachments, embeds and components are emptied, as Discord does
// for apps lacking the message content intent. The caller holds s.mu.
func (s *Server) wireMessageLocked(m *Message, withContent bool) wireMessage {
	w := wireMessage{
		ID:           m.ID,
		Type:         m.Type,
		ChannelID:    m.ChannelID,
		Author:       s.wireUserLocked(m.AuthorID),
		Timestamp:    m.Timestamp,
		Mentions:     make([]wireUser, 0, len(m.Mentions)),
		MentionRoles: []snowflake.ID{},
		Attachments:  []wireAttachment{},
		Embeds:       []discord.Embed{},
		Components:   json.RawMessage("[]"),
		Flags:        m.Flags,
	}
	if !m.EditedAt.IsZero() {
		w.EditedTimestamp = ptr(m.EditedAt)
	}
	for _, id := range m.Mentions {
		w.Mentions = append(w.Mentions, s.wireUserLocked(id))
	}
	if m.InteractionID != 0 {
		app := s.cfg.applicationID
		w.WebhookID, w.ApplicationID = &app, &app
		if in, ok := s.inters[m.InteractionID]; ok {
			w.InteractionMetadata = s.wireInteractionMetadataLocked(in)
			if id := w.InteractionMetadata.OriginalResponseMessageID; id != nil && *id == m.ID {
				w.InteractionMetadata.OriginalResponseMessageID = nil
			}
		}
	}
	// Reactions are not message content: they are sent without the intent.
	for _, r := range m.Reactions {
		w.Reactions = append(w.Reactions, r.wire(s.botUser.ID))
	}
	if !withContent {
		return w
	}
	w.Content = m.Content
	for _, a := range m.Attachments {
		// Discord signs attachment URLs anew each time it serves a
		// message: a URL stays usable for a while after, not forever.
		wa := wireAttachment{
			ID: a.ID, Filename: a.Filename, Size: a.Size, URL: resign(a.URL, s.cfg.clock()), ProxyURL: resign(a.ProxyURL, s.cfg.clock()),
			ContentType: a.ContentType, Ephemeral: m.Flags.Has(discord.MessageFlagEphemeral),
		}
		if a.Width > 0 || a.Height > 0 {
			wa.Width, wa.Height = ptr(a.Width), ptr(a.Height)
		}
		w.Attachments = append(w.Attachments, wa)
	}
	if len(m.Embeds) > 0 {
		w.Embeds = m.Embeds
	}
	if len(m.Components) > 0 {
		w.Components = m.Components
	}
	return w
}

// wireGuildLocked returns a guild's REST JSON. The caller holds s.mu.
func (s *Server) wireGuildLocked(gs *guildState) wireGuild {
	w := wireGuild{
		ID:              gs.ID,
		Name:            gs.Name,
		OwnerID:         gs.OwnerID,
		AFKTimeout:      300,
		Roles:           make([]wireRole, 0, len(gs.roleOrder)),
		Emojis:          []json.RawMessage{},
		Stickers:        []json.RawMessage{},
		Features:        gs.Features,
		PreferredLocale: gs.Locale,
	}
	if w.Features == nil {
		w.Features = []string{}
	}
	for _, id := range gs.roleOrder {
		w.Roles = append(w.Roles, gs.roles[id].wire())
	}
	return w
}

// wireGatewayGuildLocked returns the GUILD_CREATE payload of a guild for a
// session with the given intents: members other than the bot only with the
// GUILD_MEMBERS intent. The caller holds s.mu.
func (s *Server) wireGatewayGuildLocked(gs *guildState, intents Intents) wireGatewayGuild {
	w := wireGatewayGuild{
		wireGuild:            s.wireGuildLocked(gs),
		JoinedAt:             gs.joinedAt,
		MemberCount:          len(gs.members),
		VoiceStates:          []json.RawMessage{},
		Members:              []wireMember{},
		Channels:             []wireChannel{},
		Threads:              []wireChannel{},
		Presences:            []json.RawMessage{},
		StageInstances:       []json.RawMessage{},
		GuildScheduledEvents: []json.RawMessage{},
		SoundboardSounds:     []json.RawMessage{},
	}
	for _, id := range gs.memberOrder {
		if id == s.botUser.ID || intents.Has(IntentGuildMembers) {
			w.Members = append(w.Members, s.wireMemberLocked(gs.members[id], true))
		}
	}
	for _, id := range gs.chanOrder {
		c := s.channels[id]
		wc := s.wireChannelLocked(c, nil)
		if isThread(c.Type) {
			w.Threads = append(w.Threads, wc)
		} else {
			w.Channels = append(w.Channels, wc)
		}
	}
	return w
}

// wireInteractionMetadataLocked returns the interaction_metadata of the
// messages an interaction produced. The caller holds s.mu.
func (s *Server) wireInteractionMetadataLocked(in *interaction) *wireInteractionMetadata {
	md := &wireInteractionMetadata{
		ID:                           in.id,
		Type:                         in.typ,
		User:                         s.wireUserLocked(in.userID),
		AuthorizingIntegrationOwners: map[string]snowflake.ID{"0": in.guildID},
	}
	if in.originalID != 0 && in.componentMessageID == 0 {
		md.OriginalResponseMessageID = ptr(in.originalID)
	}
	if in.targetMessageID != 0 {
		md.TargetMessageID = ptr(in.targetMessageID)
	}
	if in.componentMessageID != 0 {
		md.InteractedMessageID = ptr(in.componentMessageID)
	}
	return md
}
