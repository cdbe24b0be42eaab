package discordtest

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// RouteCreateDM opens (or finds) the bot's DM channel with a user.
const RouteCreateDM = "POST /users/@me/channels"

// dmState is the bot's direct messages, guarded by Server.mu. Its maps are
// made on first use.
type dmState struct {
	byUser    map[snowflake.ID]snowflake.ID // recipient → DM channel
	byChannel map[snowflake.ID]snowflake.ID // DM channel → recipient
	closed    map[snowflake.ID]bool         // users who accept no DM from the bot
}

// wireDMChannel is a DM channel's JSON, as POST /users/@me/channels and
// GET /channels/{id} answer it.
type wireDMChannel struct {
	ID            snowflake.ID        `json:"id"`
	Type          discord.ChannelType `json:"type"`
	LastMessageID *snowflake.ID       `json:"last_message_id"`
	Flags         int                 `json:"flags"`
	Recipients    []wireUser          `json:"recipients"`
}

// handleCreateDM answers POST /users/@me/channels {"recipient_id": …}:
// the bot's DM channel with the user, the same one on every call, as on
// Discord. The channel is created even when the user accepts no DM from
// the bot: Discord refuses only the messages (403, 50007). A recipient the
// model does not know, or the bot itself, is 400 (50033 Invalid
// Recipient(s)).
func (s *Server) handleCreateDM(rq *restRequest) restResponse {
	var body struct {
		RecipientID *snowflake.ID `json:"recipient_id"`
	}
	if err := json.Unmarshal(rq.body, &body); err != nil {
		return invalidJSON()
	}
	if body.RecipientID == nil {
		return invalidForm(map[string]any{"recipient_id": formError("BASE_TYPE_REQUIRED", "This field is required")})
	}
	user := *body.RecipientID
	if _, ok := s.users[user]; !ok || user == s.botUser.ID {
		return apiErr(http.StatusBadRequest, 50033, "Invalid Recipient(s)")
	}
	d := s.dmsLocked()
	id, ok := d.byUser[user]
	if !ok {
		id = s.newIDLocked(rq.now)
		d.byUser[user], d.byChannel[id] = id, user
	}
	return okJSON(s.wireDMChannelLocked(id))
}

// dmsLocked returns the DM state, making its maps on first use. The caller
// holds s.mu.
func (s *Server) dmsLocked() *dmState {
	if s.dms.byUser == nil {
		s.dms = dmState{
			byUser:    map[snowflake.ID]snowflake.ID{},
			byChannel: map[snowflake.ID]snowflake.ID{},
			closed:    map[snowflake.ID]bool{},
		}
	}
	return &s.dms
}

// dmRecipientLocked returns the recipient of a DM channel named by a
// route's channel.id, and whether it is one. The caller holds s.mu.
func (s *Server) dmRecipientLocked(raw string) (snowflake.ID, bool) {
	id, err := snowflake.Parse(raw)
	if err != nil {
		return 0, false
	}
	user, ok := s.dmsLocked().byChannel[id]
	return user, ok
}

func (s *Server) wireDMChannelLocked(id snowflake.ID) wireDMChannel {
	w := wireDMChannel{ID: id, Type: discord.ChannelTypeDM, Recipients: []wireUser{s.wireUserLocked(s.dms.byChannel[id])}}
	var last snowflake.ID
	for _, m := range s.messages {
		if m.ChannelID == id && m.ID > last {
			last = m.ID
		}
	}
	if last != 0 {
		w.LastMessageID = &last
	}
	return w
}

// handleCreateDMMessage answers POST /channels/{c}/messages for a DM
// channel: 403 (50007 Cannot send messages to this user) when the user
// accepts no DM from the bot (SetDMsOpen), else the message is stored
// like a guild channel's. DMs send no gateway event (not modeled).
func (s *Server) handleCreateDMMessage(rq *restRequest, channelID, user snowflake.ID) restResponse {
	if s.dmsLocked().closed[user] {
		return apiErr(http.StatusForbidden, 50007, "Cannot send messages to this user")
	}
	raw, files, err := parseBody(rq.r, rq.body)
	var p messagePayload
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return invalidJSON()
	}
	m := &Message{AuthorID: s.botUser.ID, ChannelID: channelID}
	if errRs := s.postMessageLocked(m, p, files, true, rq.now); errRs != nil {
		return *errRs
	}
	return okJSON(s.wireMessageLocked(m, true))
}

// SetDMsOpen sets whether a user accepts direct messages from the bot
// (they do by default). A user who does not still gets a DM channel from
// POST /users/@me/channels, but every message sent to it is answered 403
// {"message": "Cannot send messages to this user", "code": 50007}, as
// when a user closes DMs from the server's members or blocks the bot.
func (s *Server) SetDMsOpen(userID snowflake.ID, open bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dmsLocked()
	if open {
		delete(d.closed, userID)
	} else {
		d.closed[userID] = true
	}
	s.notifyLocked()
}

// DMChannel returns the ID of the bot's DM channel with a user, and false
// when the bot never opened one.
func (s *Server) DMChannel(userID snowflake.ID) (snowflake.ID, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.dmsLocked().byUser[userID]
	return id, ok
}

// DMs returns the messages the bot sent a user by direct message, oldest
// first; see also Messages, which takes the DM channel's ID.
func (s *Server) DMs(userID snowflake.ID) []Message {
	id, ok := s.DMChannel(userID)
	if !ok {
		return nil
	}
	return s.Messages(id)
}

// cloneAllowedMentions copies a message's allowed_mentions.
func cloneAllowedMentions(am *discord.AllowedMentions) *discord.AllowedMentions {
	if am == nil {
		return nil
	}
	c := *am
	c.Parse = slices.Clone(am.Parse)
	c.Roles = slices.Clone(am.Roles)
	c.Users = slices.Clone(am.Users)
	return &c
}

// WaitDMs waits until the bot has sent userID at least n direct messages
// and returns them, oldest first. Unlike WaitRequests, which returns as
// soon as the requests arrive, it returns once the messages are stored.
func (s *Server) WaitDMs(ctx context.Context, userID snowflake.ID, n int) ([]Message, error) {
	var out []Message
	err := s.waitFor(ctx, func() bool {
		out = out[:0]
		id, ok := s.dmsLocked().byUser[userID]
		if !ok {
			return false
		}
		for _, m := range s.messages {
			if m.ChannelID == id {
				out = append(out, cloneMessage(m))
			}
		}
		return len(out) >= n
	})
	slices.SortFunc(out, func(a, b Message) int { return compareIDs(a.ID, b.ID) })
	return out, err
}
