package discordtest

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// botChannelLocked finds a channel of a route and checks the bot can see
// it: unknown channels get 404 (10003), channels the bot cannot view 403
// (50001). It returns the bot's permissions in the channel. The caller
// holds s.mu.
func (s *Server) botChannelLocked(raw string) (*Channel, *guildState, discord.Permissions, *restResponse) {
	id, err := snowflake.Parse(raw)
	ch := s.channels[id]
	if err != nil || ch == nil {
		rs := unknown(10003, "Unknown Channel")
		return nil, nil, 0, &rs
	}
	gs := s.guilds[ch.GuildID]
	bot, ok := gs.members[s.botUser.ID]
	if !ok {
		rs := apiErr(http.StatusForbidden, 50001, "Missing Access")
		return nil, nil, 0, &rs
	}
	perms := s.channelPermissionsLocked(gs, ch, bot)
	if !perms.Has(discord.PermissionViewChannel) {
		rs := apiErr(http.StatusForbidden, 50001, "Missing Access")
		return nil, nil, 0, &rs
	}
	return ch, gs, perms, nil
}

func (s *Server) handleGetChannel(rq *restRequest) restResponse {
	if _, ok := s.dmRecipientLocked(rq.params["channel.id"]); ok {
		id, _ := snowflake.Parse(rq.params["channel.id"])
		return okJSON(s.wireDMChannelLocked(id))
	}
	ch, _, _, errRs := s.botChannelLocked(rq.params["channel.id"])
	if errRs != nil {
		return *errRs
	}
	return okJSON(s.wireChannelLocked(ch, nil))
}

// handleGetMessage answers GET /channels/{c}/messages/{m}. The bot needs
// VIEW_CHANNEL and READ_MESSAGE_HISTORY (else 403, 50001); unknown,
// deleted, ephemeral or misplaced messages are 404 (10008). Without the
// message content intent enabled for the application, content,
// attachments, embeds and components come back empty unless the bot wrote
// or is mentioned in the message.
func (s *Server) handleGetMessage(rq *restRequest) restResponse {
	ch, _, perms, errRs := s.botChannelLocked(rq.params["channel.id"])
	if errRs != nil {
		return *errRs
	}
	if !perms.Has(discord.PermissionReadMessageHistory) {
		return apiErr(http.StatusForbidden, 50001, "Missing Access")
	}
	id, err := snowflake.Parse(rq.params["message.id"])
	m := s.messages[id]
	if err != nil || m == nil || m.ChannelID != ch.ID || m.Flags.Has(discord.MessageFlagEphemeral) {
		return unknown(10008, "Unknown Message")
	}
	return okJSON(s.wireMessageLocked(m, s.messageContentVisibleLocked(m, 0, false)))
}

// handleCreateMessage answers POST /channels/{c}/messages. The bot needs
// SEND_MESSAGES (SEND_MESSAGES_IN_THREADS in threads), else 403 (50013).
// DM channels are handled by handleCreateDMMessage.
func (s *Server) handleCreateMessage(rq *restRequest) restResponse {
	if user, ok := s.dmRecipientLocked(rq.params["channel.id"]); ok {
		id, _ := snowflake.Parse(rq.params["channel.id"])
		return s.handleCreateDMMessage(rq, id, user)
	}
	ch, _, perms, errRs := s.botChannelLocked(rq.params["channel.id"])
	if errRs != nil {
		return *errRs
	}
	need := discord.PermissionSendMessages
	if isThread(ch.Type) {
		need = discord.PermissionSendMessagesInThreads
	}
	if !perms.Has(need) {
		return apiErr(http.StatusForbidden, 50013, "Missing Permissions")
	}
	raw, files, err := parseBody(rq.r, rq.body)
	var p messagePayload
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return invalidJSON()
	}
	if len(files) > 0 && !perms.Has(discord.PermissionAttachFiles) {
		return apiErr(http.StatusForbidden, 50013, "Missing Permissions")
	}
	m := &Message{AuthorID: s.botUser.ID, ChannelID: ch.ID, GuildID: ch.GuildID}
	if errRs := s.postMessageLocked(m, p, files, perms.Has(discord.PermissionEmbedLinks), rq.now); errRs != nil {
		return *errRs
	}
	s.dispatchMessageCreateLocked(m)
	return okJSON(s.wireMessageLocked(m, true))
}

// guildLocked finds the guild of a route: 404 (10004) if unknown. The
// caller holds s.mu.
func (s *Server) guildLocked(raw string) (*guildState, *restResponse) {
	id, err := snowflake.Parse(raw)
	gs := s.guilds[id]
	if err != nil || gs == nil {
		rs := unknown(10004, "Unknown Guild")
		return nil, &rs
	}
	if _, ok := gs.members[s.botUser.ID]; !ok {
		rs := apiErr(http.StatusForbidden, 50001, "Missing Access")
		return nil, &rs
	}
	return gs, nil
}

func (s *Server) handleGetGuild(rq *restRequest) restResponse {
	gs, errRs := s.guildLocked(rq.params["guild.id"])
	if errRs != nil {
		return *errRs
	}
	if rq.query.Get("with_counts") != "true" {
		return okJSON(s.wireGuildLocked(gs))
	}
	return okJSON(struct {
		wireGuild
		ApproximateMemberCount   int `json:"approximate_member_count"`
		ApproximatePresenceCount int `json:"approximate_presence_count"`
	}{s.wireGuildLocked(gs), len(gs.members), 0})
}

func (s *Server) handleGetGuildChannels(rq *restRequest) restResponse {
	gs, errRs := s.guildLocked(rq.params["guild.id"])
	if errRs != nil {
		return *errRs
	}
	out := []wireChannel{}
	for _, id := range gs.chanOrder {
		if c := s.channels[id]; !isThread(c.Type) {
			out = append(out, s.wireChannelLocked(c, nil))
		}
	}
	return okJSON(out)
}

func (s *Server) handleGetRoles(rq *restRequest) restResponse {
	gs, errRs := s.guildLocked(rq.params["guild.id"])
	if errRs != nil {
		return *errRs
	}
	out := make([]wireRole, 0, len(gs.roleOrder))
	for _, id := range gs.roleOrder {
		out = append(out, gs.roles[id].wire())
	}
	return okJSON(out)
}

func (s *Server) handleGetMember(rq *restRequest) restResponse {
	gs, errRs := s.guildLocked(rq.params["guild.id"])
	if errRs != nil {
		return *errRs
	}
	id, err := snowflake.Parse(rq.params["user.id"])
	m := gs.members[id]
	if err != nil || m == nil {
		return unknown(10007, "Unknown Member")
	}
	return okJSON(s.wireMemberLocked(m, true))
}

// postMessageLocked fills m, a message the bot sends, from its payload p
// and files (embeds only when embeds is set: the bot may embed links),
// checks it as Discord does, and stores it with a new ID at now; on a
// refusal it stores nothing and returns Discord's answer.
func (s *Server) postMessageLocked(m *Message, p messagePayload, files []File, embeds bool, now time.Time) *restResponse {
	if p.Content != nil {
		m.Content = *p.Content
	}
	if p.Embeds != nil && embeds {
		m.Embeds = *p.Embeds
	}
	if len(p.Components) > 0 && string(p.Components) != "null" {
		m.Components = p.Components
	}
	if p.Flags != nil {
		m.Flags = *p.Flags & (discord.MessageFlagSuppressEmbeds | discord.MessageFlagSuppressNotifications | discord.MessageFlagIsComponentsV2)
	}
	m.AllowedMentions = cloneAllowedMentions(p.AllowedMentions)
	m.Attachments = filesToAttachments(files)
	if errRs := checkMessage(m, len(p.Poll) > 0 && string(p.Poll) != "null"); errRs != nil {
		return errRs
	}
	m.ID = s.newIDLocked(now)
	m.Timestamp = now
	m.Attachments = s.fillAttachmentsLocked(m.ChannelID, m.Attachments, now)
	s.messages[m.ID] = m
	return nil
}
