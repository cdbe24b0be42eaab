package discordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// Invocation is what a user does to create an interaction: run a command,
// pick from a select menu, press a button or type into an autocompleted
// option.
type Invocation struct {
	// GuildID defaults to the channel's guild.
	GuildID snowflake.ID
	// ChannelID is where the user acts. For MessageCommand, SelectMenu and
	// Button it defaults to the target message's channel.
	ChannelID snowflake.ID
	// UserID is the acting user; they must be a member of the guild.
	UserID snowflake.ID
	// Locale is the user's locale; defaults to en-US.
	Locale discord.Locale
	// Data is what the user did: ChatInput, MessageCommand, SelectMenu,
	// Button or Autocomplete.
	Data InvocationData
}

// InvocationData is the kind-specific part of an Invocation.
type InvocationData interface {
	interactionType() discord.InteractionType
}

// ChatInput runs a slash command.
type ChatInput struct {
	// Name is the command's name. If the bot synced a command of that name
	// (for the guild or globally) the interaction carries its ID.
	Name string
	// Options are the options the user filled in, sub-commands included.
	Options []CommandOption
}

// MessageCommand runs a message context menu command on a message, which
// the interaction carries in data.resolved.messages, content included
// whatever the bot's intents.
type MessageCommand struct {
	// Name is the command's name.
	Name string
	// TargetID is the message's ID; it must exist.
	TargetID snowflake.ID
}

// SelectMenu picks values from a select menu on a message.
type SelectMenu struct {
	// CustomID is the menu's custom_id.
	CustomID string
	// Values are the picked values.
	Values []string
	// MessageID is the message the menu is on, usually one the bot sent.
	MessageID snowflake.ID
	// ComponentType defaults to discord.ComponentTypeStringSelectMenu.
	ComponentType discord.ComponentType
}

// Button presses a button on a message.
type Button struct {
	// CustomID is the button's custom_id.
	CustomID string
	// MessageID is the message the button is on.
	MessageID snowflake.ID
}

// Autocomplete asks for choices while the user types into an option. Mark
// the option being typed with Focused; its Value is the partial input.
type Autocomplete struct {
	// Name is the command's name.
	Name string
	// Options are the options typed so far.
	Options []CommandOption
}

func (ChatInput) interactionType() discord.InteractionType {
	return discord.InteractionTypeApplicationCommand
}

func (MessageCommand) interactionType() discord.InteractionType {
	return discord.InteractionTypeApplicationCommand
}

func (SelectMenu) interactionType() discord.InteractionType { return discord.InteractionTypeComponent }

func (Button) interactionType() discord.InteractionType { return discord.InteractionTypeComponent }

func (Autocomplete) interactionType() discord.InteractionType {
	return discord.InteractionTypeAutocomplete
}

// CommandOption is a command option as the user filled it in.
type CommandOption struct {
	// Name is the option's name.
	Name string
	// Type is the option's type. Zero infers it from Value: string,
	// int/int64, bool, float64 and Attachment. User, channel, role and
	// mentionable options need it set, with a snowflake.ID Value, which the
	// interaction resolves from the model.
	Type discord.ApplicationCommandOptionType
	// Value is the option's value; an Attachment for attachment options.
	Value any
	// Focused marks the option being typed in an Autocomplete.
	Focused bool
	// Options are the options of a sub-command or sub-command group.
	Options []CommandOption
}

// Interaction is a dispatched interaction, to wait on the bot's responses.
type Interaction struct {
	// ID is the interaction's ID; its timestamp is CreatedAt.
	ID snowflake.ID
	// Token is the interaction token.
	Token string
	// Type is the interaction type.
	Type discord.InteractionType
	// ShardID is the shard the interaction was dispatched to.
	ShardID int
	// CreatedAt is when the interaction was created, on the server's clock.
	// The initial callback is due within InteractionDeadline of it.
	CreatedAt time.Time

	s *Server
}

// Responses returns what the bot did with the interaction so far.
func (i *Interaction) Responses() []Response { return i.s.Responses(i.ID) }

// Wait waits until the bot made at least n responses (accepted or not) and
// returns them all.
func (i *Interaction) Wait(ctx context.Context, n int) ([]Response, error) {
	return i.s.WaitResponses(ctx, i.ID, n)
}

// WaitResponse waits for the bot's first response and returns it.
func (i *Interaction) WaitResponse(ctx context.Context) (Response, error) {
	return i.s.WaitResponse(ctx, i.ID)
}

// FirstResponseLatency returns how long after its creation the interaction
// was acknowledged, on the server's clock, and false while it is not.
func (i *Interaction) FirstResponseLatency() (time.Duration, bool) {
	return i.s.FirstResponseLatency(i.ID)
}

// Original returns the message of the original response, once there is one.
func (i *Interaction) Original() (Message, bool) {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	in, ok := i.s.inters[i.ID]
	if !ok || in.originalID == 0 {
		return Message{}, false
	}
	m, ok := i.s.messages[in.originalID]
	if !ok {
		return Message{}, false
	}
	return cloneMessage(m), true
}

// ResponseKind tells which endpoint a Response came through.
type ResponseKind int

// Response kinds.
const (
	// KindCallback is POST /interactions/{id}/{token}/callback.
	KindCallback ResponseKind = iota + 1
	// KindEditOriginal is PATCH /webhooks/{app}/{token}/messages/@original.
	KindEditOriginal
	// KindDeleteOriginal is DELETE /webhooks/{app}/{token}/messages/@original.
	KindDeleteOriginal
	// KindFollowup is POST /webhooks/{app}/{token}.
	KindFollowup
	// KindEditFollowup is PATCH /webhooks/{app}/{token}/messages/{id}.
	KindEditFollowup
	// KindDeleteFollowup is DELETE /webhooks/{app}/{token}/messages/{id}.
	KindDeleteFollowup
)

// String returns the kind's name.
func (k ResponseKind) String() string {
	switch k {
	case KindCallback:
		return "callback"
	case KindEditOriginal:
		return "edit-original"
	case KindDeleteOriginal:
		return "delete-original"
	case KindFollowup:
		return "followup"
	case KindEditFollowup:
		return "edit-followup"
	case KindDeleteFollowup:
		return "delete-followup"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Response is one request the bot made about an interaction, and how the
// stand-in answered it.
type Response struct {
	// Kind is the endpoint.
	Kind ResponseKind
	// Type is the callback type, for KindCallback.
	Type discord.InteractionResponseType
	// At is when the request arrived, on the server's clock.
	At time.Time
	// Status is the HTTP status the stand-in answered with.
	Status int
	// Code and Error are the Discord error code and message of a refusal.
	Code  int
	Error string
	// MessageID is the message created, edited or deleted, if any.
	MessageID snowflake.ID
	// Data is the message the request carried, if any.
	Data *MessageData
	// Choices are the choices of an autocomplete result.
	Choices []Choice
	// Body is the JSON the bot sent (payload_json for multipart bodies).
	Body json.RawMessage
}

// OK reports whether the stand-in accepted the request.
func (r Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// MessageData is the message part of a response.
type MessageData struct {
	// Content is the text; HasContent tells an empty edit from none.
	Content    string
	HasContent bool
	// Embeds are the embeds sent.
	Embeds []discord.Embed
	// Components are the components sent, raw.
	Components json.RawMessage
	// Flags are the message flags sent, such as ephemeral.
	Flags discord.MessageFlags
	// Files are the files uploaded with the request.
	Files []File
	// Title and CustomID are set for modals.
	Title, CustomID string
}

// File is a file uploaded with a message.
type File struct {
	// Name is the file name.
	Name string
	// ContentType is the part's media type.
	ContentType string
	// Size is the size in bytes.
	Size int
}

// Choice is an autocomplete choice.
type Choice struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// interaction is the stand-in's record of an interaction, guarded by
// Server.mu.
type interaction struct {
	id                 snowflake.ID
	token              string
	typ                discord.InteractionType
	guildID            snowflake.ID
	channelID          snowflake.ID
	userID             snowflake.ID
	shardID            int
	createdAt          time.Time
	targetMessageID    snowflake.ID
	componentMessageID snowflake.ID

	acked      bool
	ackType    discord.InteractionResponseType
	ackAt      time.Time
	originalID snowflake.ID
	loading    bool
	followups  []snowflake.ID
	responses  []Response
}

// Interact creates an interaction from an invocation and dispatches
// INTERACTION_CREATE to the shard that owns the guild, with a fresh ID and
// token. member.permissions carries the user's permissions in the channel
// and app_permissions the bot's. If the shard's connection is down but its
// session resumable, the event waits for the RESUME.
func (s *Server) Interact(inv Invocation) (*Interaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if inv.Data == nil {
		return nil, fmt.Errorf("%w: invocation without data", ErrInvalid)
	}
	in := &interaction{typ: inv.Data.interactionType(), userID: inv.UserID}

	// Locate the message a message command or component acts on.
	var target *Message
	switch d := inv.Data.(type) {
	case MessageCommand:
		target = s.messages[d.TargetID]
		if target == nil {
			return nil, fmt.Errorf("%w %d", ErrUnknownMessage, d.TargetID)
		}
		in.targetMessageID = target.ID
	case SelectMenu:
		target = s.messages[d.MessageID]
		if target == nil {
			return nil, fmt.Errorf("%w %d", ErrUnknownMessage, d.MessageID)
		}
		in.componentMessageID = target.ID
	case Button:
		target = s.messages[d.MessageID]
		if target == nil {
			return nil, fmt.Errorf("%w %d", ErrUnknownMessage, d.MessageID)
		}
		in.componentMessageID = target.ID
	}
	if inv.ChannelID == 0 && target != nil {
		inv.ChannelID = target.ChannelID
	}
	ch, ok := s.channels[inv.ChannelID]
	if !ok {
		return nil, fmt.Errorf("%w %d", ErrUnknownChannel, inv.ChannelID)
	}
	if target != nil && target.ChannelID != ch.ID {
		return nil, fmt.Errorf("%w: message %d is not in channel %d", ErrInvalid, target.ID, ch.ID)
	}
	switch ch.Type {
	case discord.ChannelTypeGuildCategory, discord.ChannelTypeGuildForum, discord.ChannelTypeGuildMedia:
		return nil, fmt.Errorf("%w: no interactions in channel type %d", ErrInvalid, ch.Type)
	}
	if inv.GuildID == 0 {
		inv.GuildID = ch.GuildID
	}
	if inv.GuildID != ch.GuildID {
		return nil, fmt.Errorf("%w: channel %d is not in guild %d", ErrInvalid, ch.ID, inv.GuildID)
	}
	gs := s.guilds[inv.GuildID]
	member, ok := gs.members[inv.UserID]
	if !ok {
		return nil, fmt.Errorf("%w %d in guild %d", ErrUnknownMember, inv.UserID, inv.GuildID)
	}
	bot, ok := gs.members[s.botUser.ID]
	if !ok {
		return nil, fmt.Errorf("%w: the bot is not in guild %d", ErrUnknownMember, inv.GuildID)
	}
	sess := s.sessionForGuildLocked(gs.ID)
	if sess == nil {
		return nil, fmt.Errorf("%w owning guild %d", ErrNoSession, gs.ID)
	}
	if inv.Locale == "" {
		inv.Locale = discord.LocaleEnglishUS
	}

	now := s.cfg.clock()
	in.id = s.newIDLocked(now)
	in.token = randomToken()
	in.guildID, in.channelID = gs.ID, ch.ID
	in.shardID = sess.shardID
	in.createdAt = now

	userPerms := s.channelPermissionsLocked(gs, ch, member)
	appPerms := s.channelPermissionsLocked(gs, ch, bot)
	wm := s.wireMemberLocked(member, true)
	wm.Permissions = ptr(permString(userPerms))
	w := wireInteraction{
		ID:                           in.id,
		ApplicationID:                s.cfg.applicationID,
		Type:                         in.typ,
		Guild:                        &wireInteractionGuild{ID: gs.ID, Locale: gs.Locale, Features: gs.Features},
		GuildID:                      gs.ID,
		Channel:                      s.wireChannelLocked(ch, &userPerms),
		ChannelID:                    ch.ID,
		Member:                       wm,
		Token:                        in.token,
		Version:                      1,
		AppPermissions:               permString(appPerms),
		Locale:                       inv.Locale,
		GuildLocale:                  gs.Locale,
		Entitlements:                 []json.RawMessage{},
		AuthorizingIntegrationOwners: map[string]snowflake.ID{"0": gs.ID},
		Context:                      0,
		AttachmentSizeLimit:          10 << 20,
	}
	if w.Guild.Features == nil {
		w.Guild.Features = []string{}
	}

	var err error
	switch d := inv.Data.(type) {
	case ChatInput:
		w.Data, err = s.commandDataLocked(gs, ch, member, d.Name, d.Options, false, now)
	case Autocomplete:
		w.Data, err = s.commandDataLocked(gs, ch, member, d.Name, d.Options, true, now)
	case MessageCommand:
		id, guildCmd := s.commandIDLocked(gs.ID, d.Name, discord.ApplicationCommandTypeMessage, now)
		data := map[string]any{
			"id":        id,
			"name":      d.Name,
			"type":      discord.ApplicationCommandTypeMessage,
			"target_id": target.ID,
			"resolved": map[string]any{
				"messages": map[string]wireMessage{target.ID.String(): s.wireMessageLocked(target, true)},
			},
		}
		if guildCmd {
			data["guild_id"] = gs.ID
		}
		w.Data = data
	case SelectMenu:
		ct := d.ComponentType
		if ct == 0 {
			ct = discord.ComponentTypeStringSelectMenu
		}
		values := d.Values
		if values == nil {
			values = []string{}
		}
		w.Data = map[string]any{"custom_id": d.CustomID, "component_type": ct, "values": values}
		wmsg := s.wireMessageLocked(target, true)
		w.Message = &wmsg
	case Button:
		w.Data = map[string]any{"custom_id": d.CustomID, "component_type": discord.ComponentTypeButton}
		wmsg := s.wireMessageLocked(target, true)
		w.Message = &wmsg
	default:
		err = fmt.Errorf("%w: invocation data %T", ErrInvalid, inv.Data)
	}
	if err != nil {
		return nil, err
	}

	s.inters[in.id] = in
	s.byToken[in.token] = in
	s.dispatchLocked(sess, "INTERACTION_CREATE", w)
	s.notifyLocked()
	s.cfg.logger.Debug().Str("interaction_id", in.id.String()).Int("shard_id", in.shardID).Msg("interaction dispatched")
	return &Interaction{ID: in.id, Token: in.token, Type: in.typ, ShardID: in.shardID, CreatedAt: now, s: s}, nil
}

type wireInteractionGuild struct {
	ID       snowflake.ID   `json:"id"`
	Locale   discord.Locale `json:"locale"`
	Features []string       `json:"features"`
}

type wireInteraction struct {
	ID                           snowflake.ID            `json:"id"`
	ApplicationID                snowflake.ID            `json:"application_id"`
	Type                         discord.InteractionType `json:"type"`
	Data                         any                     `json:"data"`
	Guild                        *wireInteractionGuild   `json:"guild"`
	GuildID                      snowflake.ID            `json:"guild_id"`
	Channel                      wireChannel             `json:"channel"`
	ChannelID                    snowflake.ID            `json:"channel_id"`
	Member                       wireMember              `json:"member"`
	Token                        string                  `json:"token"`
	Version                      int                     `json:"version"`
	Message                      *wireMessage            `json:"message,omitempty"`
	AppPermissions               string                  `json:"app_permissions"`
	Locale                       discord.Locale          `json:"locale"`
	GuildLocale                  discord.Locale          `json:"guild_locale"`
	Entitlements                 []json.RawMessage       `json:"entitlements"`
	AuthorizingIntegrationOwners map[string]snowflake.ID `json:"authorizing_integration_owners"`
	Context                      int                     `json:"context"`
	AttachmentSizeLimit          int                     `json:"attachment_size_limit"`
}

type wireOption struct {
	Name    string                               `json:"name"`
	Type    discord.ApplicationCommandOptionType `json:"type"`
	Value   json.RawMessage                      `json:"value,omitempty"`
	Options []wireOption                         `json:"options,omitempty"`
	Focused bool                                 `json:"focused,omitempty"`
}

type wireResolved struct {
	Users       map[string]wireUser       `json:"users,omitempty"`
	Members     map[string]wireMember     `json:"members,omitempty"`
	Roles       map[string]wireRole       `json:"roles,omitempty"`
	Channels    map[string]wireChannel    `json:"channels,omitempty"`
	Attachments map[string]wireAttachment `json:"attachments,omitempty"`
}

func (r *wireResolved) empty() bool {
	return len(r.Users) == 0 && len(r.Members) == 0 && len(r.Roles) == 0 && len(r.Channels) == 0 && len(r.Attachments) == 0
}

// commandIDLocked returns the ID of the command the bot synced under that
// name and type, guild commands first, and whether it is a guild command.
// An unknown command gets a fresh ID. The caller holds s.mu.
func (s *Server) commandIDLocked(guildID snowflake.ID, name string, typ discord.ApplicationCommandType, now time.Time) (snowflake.ID, bool) {
	if c := s.app.find(guildID, name, typ); c != nil {
		return c.ID, true
	}
	if c := s.app.find(0, name, typ); c != nil {
		return c.ID, false
	}
	return s.newIDLocked(now), false
}

// commandDataLocked builds the data of a chat input or autocomplete
// interaction. The caller holds s.mu.
func (s *Server) commandDataLocked(gs *guildState, ch *Channel, user *Member, name string, opts []CommandOption, autocomplete bool, now time.Time) (map[string]any, error) {
	id, guildCmd := s.commandIDLocked(gs.ID, name, discord.ApplicationCommandTypeSlash, now)
	res := &wireResolved{}
	wopts, err := s.wireOptionsLocked(gs, ch, user, opts, res, autocomplete, now)
	if err != nil {
		return nil, err
	}
	data := map[string]any{"id": id, "name": name, "type": discord.ApplicationCommandTypeSlash}
	if len(wopts) > 0 {
		data["options"] = wopts
	}
	if !res.empty() {
		data["resolved"] = res
	}
	if guildCmd {
		data["guild_id"] = gs.ID
	}
	return data, nil
}

// wireOptionsLocked turns options into their JSON, filling res with the
// objects they refer to. The caller holds s.mu.
func (s *Server) wireOptionsLocked(gs *guildState, ch *Channel, user *Member, opts []CommandOption, res *wireResolved, autocomplete bool, now time.Time) ([]wireOption, error) {
	out := make([]wireOption, 0, len(opts))
	for _, o := range opts {
		typ := o.Type
		if typ == 0 {
			typ = inferOptionType(o.Value)
		}
		wo := wireOption{Name: o.Name, Type: typ, Focused: o.Focused}
		switch typ {
		case discord.ApplicationCommandOptionTypeSubCommand, discord.ApplicationCommandOptionTypeSubCommandGroup:
			sub, err := s.wireOptionsLocked(gs, ch, user, o.Options, res, autocomplete, now)
			if err != nil {
				return nil, err
			}
			wo.Options = sub
			out = append(out, wo)
			continue
		case 0:
			return nil, fmt.Errorf("%w: option %q has no type and a %T value", ErrInvalid, o.Name, o.Value)
		}
		if autocomplete && o.Focused {
			// Discord sends the partial input of the focused option as typed.
			raw, err := json.Marshal(fmt.Sprint(o.Value))
			if err != nil {
				return nil, err
			}
			wo.Value = raw
			out = append(out, wo)
			continue
		}
		value, err := s.resolveOptionLocked(gs, ch, user, typ, o, res, now)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(value)
		if err != nil {
			return nil, fmt.Errorf("%w: option %q: %v", ErrInvalid, o.Name, err)
		}
		wo.Value = raw
		out = append(out, wo)
	}
	return out, nil
}

// resolveOptionLocked returns an option's wire value and records the object
// it refers to in res. The caller holds s.mu.
func (s *Server) resolveOptionLocked(gs *guildState, ch *Channel, user *Member, typ discord.ApplicationCommandOptionType, o CommandOption, res *wireResolved, now time.Time) (any, error) {
	switch typ {
	case discord.ApplicationCommandOptionTypeAttachment:
		a, ok := o.Value.(Attachment)
		if !ok {
			return nil, fmt.Errorf("%w: attachment option %q needs an Attachment value", ErrInvalid, o.Name)
		}
		if a.ID == 0 {
			a.ID = s.newIDLocked(now)
		}
		if a.URL == "" {
			a.URL = signURL(fmt.Sprintf("https://cdn.discordapp.com/ephemeral-attachments/%d/%d/%s", s.cfg.applicationID, a.ID, a.Filename), now)
		}
		filled := s.fillAttachmentsLocked(ch.ID, []Attachment{a}, now)[0]
		wa := wireAttachment{
			ID: filled.ID, Filename: filled.Filename, Size: filled.Size, URL: filled.URL, ProxyURL: filled.ProxyURL,
			ContentType: filled.ContentType, Ephemeral: true,
		}
		if filled.Width > 0 || filled.Height > 0 {
			wa.Width, wa.Height = ptr(filled.Width), ptr(filled.Height)
		}
		if res.Attachments == nil {
			res.Attachments = map[string]wireAttachment{}
		}
		res.Attachments[filled.ID.String()] = wa
		return filled.ID, nil
	case discord.ApplicationCommandOptionTypeUser, discord.ApplicationCommandOptionTypeChannel,
		discord.ApplicationCommandOptionTypeRole, discord.ApplicationCommandOptionTypeMentionable:
		id, ok := o.Value.(snowflake.ID)
		if !ok {
			return nil, fmt.Errorf("%w: option %q needs a snowflake.ID value", ErrInvalid, o.Name)
		}
		if err := s.resolveIDLocked(gs, ch, user, typ, id, res); err != nil {
			return nil, fmt.Errorf("option %q: %w", o.Name, err)
		}
		return id, nil
	}
	return o.Value, nil
}

// resolveIDLocked records the user, member, channel or role an option names:
// members with their permissions in the interaction's channel, channels
// with the invoking user's permissions in them. The caller holds s.mu.
func (s *Server) resolveIDLocked(gs *guildState, ch *Channel, user *Member, typ discord.ApplicationCommandOptionType, id snowflake.ID, res *wireResolved) error {
	if typ == discord.ApplicationCommandOptionTypeUser || typ == discord.ApplicationCommandOptionTypeMentionable {
		if u, ok := s.users[id]; ok {
			if res.Users == nil {
				res.Users = map[string]wireUser{}
			}
			res.Users[id.String()] = u.wire()
			if m, ok := gs.members[id]; ok {
				if res.Members == nil {
					res.Members = map[string]wireMember{}
				}
				wm := s.wireMemberLocked(m, false)
				wm.Permissions = ptr(permString(s.channelPermissionsLocked(gs, ch, m)))
				res.Members[id.String()] = wm
			}
			return nil
		}
		if typ == discord.ApplicationCommandOptionTypeUser {
			return fmt.Errorf("%w %d", ErrUnknownMember, id)
		}
	}
	if typ == discord.ApplicationCommandOptionTypeRole || typ == discord.ApplicationCommandOptionTypeMentionable {
		if r, ok := gs.roles[id]; ok {
			if res.Roles == nil {
				res.Roles = map[string]wireRole{}
			}
			res.Roles[id.String()] = r.wire()
			return nil
		}
		return fmt.Errorf("%w %d", ErrUnknownRole, id)
	}
	c, ok := s.channels[id]
	if !ok || c.GuildID != gs.ID {
		return fmt.Errorf("%w %d", ErrUnknownChannel, id)
	}
	if res.Channels == nil {
		res.Channels = map[string]wireChannel{}
	}
	perms := s.channelPermissionsLocked(gs, c, user)
	wc := wireChannel{ID: c.ID, Type: c.Type, Name: c.Name, Permissions: ptr(permString(perms))}
	if c.ParentID != 0 {
		wc.ParentID = ptr(c.ParentID)
	}
	if isThread(c.Type) {
		wc.ThreadMetadata = &wireThreadMetadata{AutoArchiveDuration: 1440, ArchiveTimestamp: c.ID.Time()}
	}
	res.Channels[id.String()] = wc
	return nil
}

// inferOptionType maps a Go value to an option type, or 0.
func inferOptionType(v any) discord.ApplicationCommandOptionType {
	switch v.(type) {
	case string:
		return discord.ApplicationCommandOptionTypeString
	case int, int32, int64:
		return discord.ApplicationCommandOptionTypeInt
	case bool:
		return discord.ApplicationCommandOptionTypeBool
	case float32, float64:
		return discord.ApplicationCommandOptionTypeFloat
	case Attachment:
		return discord.ApplicationCommandOptionTypeAttachment
	}
	return 0
}

// Responses returns, in order, every request the bot made about an
// interaction: callbacks, edits, followups and deletions, refused ones
// included.
func (s *Server) Responses(interactionID snowflake.ID) []Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.inters[interactionID]
	if !ok {
		return nil
	}
	return slices.Clone(in.responses)
}

// WaitResponse waits for the bot's first request about an interaction and
// returns it.
func (s *Server) WaitResponse(ctx context.Context, interactionID snowflake.ID) (Response, error) {
	rs, err := s.WaitResponses(ctx, interactionID, 1)
	if err != nil {
		return Response{}, err
	}
	return rs[0], nil
}

// WaitResponses waits until the bot made at least n requests about an
// interaction and returns them all.
func (s *Server) WaitResponses(ctx context.Context, interactionID snowflake.ID, n int) ([]Response, error) {
	var out []Response
	var unknown bool
	err := s.waitFor(ctx, func() bool {
		in, ok := s.inters[interactionID]
		if !ok {
			unknown = true
			return true
		}
		if len(in.responses) < n {
			return false
		}
		out = slices.Clone(in.responses)
		return true
	})
	if err != nil {
		return nil, err
	}
	if unknown {
		return nil, fmt.Errorf("%w %d", ErrUnknownInteraction, interactionID)
	}
	return out, nil
}

// FirstResponseLatency returns how long after its creation an interaction
// was acknowledged, on the server's clock, and false while it is not.
func (s *Server) FirstResponseLatency(interactionID snowflake.ID) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.inters[interactionID]
	if !ok || !in.acked {
		return 0, false
	}
	return in.ackAt.Sub(in.createdAt), true
}

// DuplicateAcks returns how many initial callbacks were refused because the
// interaction was already acknowledged (error 40060), over all
// interactions.
func (s *Server) DuplicateAcks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dupAcks
}
