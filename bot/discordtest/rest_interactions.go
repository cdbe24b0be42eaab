package discordtest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// messagePayload is a message as a bot sends it, in a callback's data, an
// edit or a followup. Nil fields were absent.
type messagePayload struct {
	Content     *string               `json:"content"`
	Embeds      *[]discord.Embed      `json:"embeds"`
	Components  json.RawMessage       `json:"components"`
	Flags       *discord.MessageFlags `json:"flags"`
	Attachments *[]json.RawMessage    `json:"attachments"`
	Poll        json.RawMessage       `json:"poll"`
	Title       string                `json:"title"`
	CustomID    string                `json:"custom_id"`
	Choices     *[]Choice             `json:"choices"`

	// AllowedMentions is kept only for POST /channels/{id}/messages.
	AllowedMentions *discord.AllowedMentions `json:"allowed_mentions"`
}

// data returns the recorded form of a payload.
func (p *messagePayload) data(files []File) *MessageData {
	d := &MessageData{Files: files, Title: p.Title, CustomID: p.CustomID}
	if p.Content != nil {
		d.Content, d.HasContent = *p.Content, true
	}
	if p.Embeds != nil {
		d.Embeds = *p.Embeds
	}
	if len(p.Components) > 0 && string(p.Components) != "null" {
		d.Components = bytes.Clone(p.Components)
	}
	if p.Flags != nil {
		d.Flags = *p.Flags
	}
	return d
}

// parseBody returns the JSON of a request body, unwrapping payload_json of
// a multipart body, and the files uploaded with it.
func parseBody(r *http.Request, body []byte) (json.RawMessage, []File, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		return body, nil, nil
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var (
		payload json.RawMessage
		files   []File
	)
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		data, err := io.ReadAll(part)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case part.FormName() == "payload_json":
			payload = data
		case part.FileName() != "":
			files = append(files, File{Name: part.FileName(), ContentType: part.Header.Get("Content-Type"), Size: len(data)})
		}
	}
	return payload, files, nil
}

// recordLocked appends a response to an interaction and returns the
// answer. The caller holds s.mu.
func (s *Server) recordLocked(in *interaction, rec Response, rs restResponse) restResponse {
	rec.Status = rs.status
	if e, ok := rs.body.(apiError); ok {
		rec.Code, rec.Error = e.Code, e.Message
	}
	in.responses = append(in.responses, rec)
	s.notifyLocked()
	return rs
}

// CallbackAllowed reports whether Discord takes a callback (initial
// response) type for an interaction type: a rule of Discord's, shared
// with the in-memory double of the bot's Discord adapter.
func CallbackAllowed(it discord.InteractionType, rt discord.InteractionResponseType) bool {
	switch it {
	case discord.InteractionTypeApplicationCommand:
		return rt == discord.InteractionResponseTypeCreateMessage ||
			rt == discord.InteractionResponseTypeDeferredCreateMessage ||
			rt == discord.InteractionResponseTypeModal
	case discord.InteractionTypeComponent:
		return rt == discord.InteractionResponseTypeCreateMessage ||
			rt == discord.InteractionResponseTypeDeferredCreateMessage ||
			rt == discord.InteractionResponseTypeDeferredUpdateMessage ||
			rt == discord.InteractionResponseTypeUpdateMessage ||
			rt == discord.InteractionResponseTypeModal
	case discord.InteractionTypeAutocomplete:
		return rt == discord.InteractionResponseTypeAutocompleteResult
	case discord.InteractionTypeModalSubmit:
		return rt == discord.InteractionResponseTypeCreateMessage ||
			rt == discord.InteractionResponseTypeDeferredCreateMessage ||
			rt == discord.InteractionResponseTypeDeferredUpdateMessage ||
			rt == discord.InteractionResponseTypeUpdateMessage
	}
	return false
}

// handleCallback answers POST /interactions/{id}/{token}/callback, the
// initial response. It must come within InteractionDeadline of the
// interaction's creation (else 404, 10062) and only once (else 400, 40060).
func (s *Server) handleCallback(rq *restRequest) restResponse {
	id, err := snowflake.Parse(rq.params["interaction.id"])
	in := s.inters[id]
	if err != nil || in == nil || in.token != rq.params["interaction.token"] {
		return unknown(10062, "Unknown interaction")
	}
	rec := Response{Kind: KindCallback, At: rq.now}
	raw, files, err := parseBody(rq.r, rq.body)
	rec.Body = bytes.Clone(raw)
	var cb struct {
		Type *discord.InteractionResponseType `json:"type"`
		Data json.RawMessage                  `json:"data"`
	}
	if err != nil || json.Unmarshal(raw, &cb) != nil {
		return s.recordLocked(in, rec, invalidJSON())
	}
	if cb.Type == nil {
		return s.recordLocked(in, rec, invalidForm(map[string]any{"type": formError("BASE_TYPE_REQUIRED", "This field is required")}))
	}
	rec.Type = *cb.Type
	if in.acked {
		s.dupAcks++
		return s.recordLocked(in, rec, apiErr(http.StatusBadRequest, 40060, "Interaction has already been acknowledged."))
	}
	if rq.now.Sub(in.createdAt) > InteractionDeadline {
		return s.recordLocked(in, rec, unknown(10062, "Unknown interaction"))
	}
	if !CallbackAllowed(in.typ, rec.Type) {
		return s.recordLocked(in, rec, invalidForm(map[string]any{"type": formError("INTERACTION_RESPONSE_TYPE_INVALID", "Invalid interaction response type")}))
	}
	var p messagePayload
	if len(cb.Data) > 0 && string(cb.Data) != "null" {
		if err := json.Unmarshal(cb.Data, &p); err != nil {
			return s.recordLocked(in, rec, invalidForm(map[string]any{"data": formError("MODEL_TYPE_CONVERT", "Invalid data")}))
		}
		rec.Data = p.data(files)
	}

	var msg *Message
	switch rec.Type {
	case discord.InteractionResponseTypeCreateMessage:
		var errRs *restResponse
		if msg, errRs = s.newMessageLocked(in, &p, files, rq.now); errRs != nil {
			return s.recordLocked(in, rec, *errRs)
		}
		in.originalID = msg.ID
	case discord.InteractionResponseTypeDeferredCreateMessage:
		flags := discord.MessageFlagLoading
		if p.Flags != nil {
			flags |= *p.Flags & discord.MessageFlagEphemeral
		}
		msg = s.storeBotMessageLocked(in, &Message{Flags: flags}, rq.now)
		in.originalID, in.loading = msg.ID, true
	case discord.InteractionResponseTypeDeferredUpdateMessage:
		in.originalID = in.componentMessageID
	case discord.InteractionResponseTypeUpdateMessage:
		target := s.messages[in.componentMessageID]
		if target == nil {
			return s.recordLocked(in, rec, unknown(10008, "Unknown Message"))
		}
		if errRs := s.editMessageLocked(target, &p, files, rq.now); errRs != nil {
			return s.recordLocked(in, rec, *errRs)
		}
		in.originalID, msg = target.ID, target
	case discord.InteractionResponseTypeAutocompleteResult:
		if p.Choices == nil || len(*p.Choices) > 25 {
			return s.recordLocked(in, rec, invalidForm(map[string]any{"data": map[string]any{"choices": formError("BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")}}))
		}
		rec.Choices = *p.Choices
	case discord.InteractionResponseTypeModal:
		if n := utf8.RuneCountInString(p.Title); n < 1 || n > 45 || p.CustomID == "" ||
			len(p.Components) == 0 || string(p.Components) == "null" || string(p.Components) == "[]" {
			return s.recordLocked(in, rec, invalidForm(map[string]any{"data": formError("MODAL_INVALID", "A modal needs a title, a custom_id and components")}))
		}
	}
	if msg != nil {
		rec.MessageID = msg.ID
	}
	in.acked, in.ackType, in.ackAt = true, rec.Type, rq.now

	if rq.query.Get("with_response") != "true" {
		return s.recordLocked(in, rec, noContent())
	}
	cbInteraction := map[string]any{"id": in.id, "type": in.typ}
	resource := map[string]any{"type": rec.Type}
	if msg != nil {
		cbInteraction["response_message_id"] = msg.ID
		cbInteraction["response_message_loading"] = msg.Flags.Has(discord.MessageFlagLoading)
		cbInteraction["response_message_ephemeral"] = msg.Flags.Has(discord.MessageFlagEphemeral)
		resource["message"] = s.wireMessageLocked(msg, true)
	}
	return s.recordLocked(in, rec, okJSON(map[string]any{"interaction": cbInteraction, "resource": resource}))
}

// checkMessage validates a message about to be stored: not empty, content
// of at most 2000 characters, at most 10 embeds.
func checkMessage(m *Message, pollSent bool) *restResponse {
	if m.Content == "" && len(m.Embeds) == 0 && len(m.Attachments) == 0 && !pollSent &&
		(len(m.Components) == 0 || string(m.Components) == "[]" || string(m.Components) == "null") {
		rs := apiErr(http.StatusBadRequest, 50006, "Cannot send an empty message")
		return &rs
	}
	if utf8.RuneCountInString(m.Content) > 2000 {
		rs := invalidForm(map[string]any{"content": formError("BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")})
		return &rs
	}
	if len(m.Embeds) > 10 {
		rs := invalidForm(map[string]any{"embeds": formError("BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.")})
		return &rs
	}
	return nil
}

// sendableFlags are the flags a bot may set on a new message.
const sendableFlags = discord.MessageFlagSuppressEmbeds | discord.MessageFlagEphemeral |
	discord.MessageFlagSuppressNotifications | discord.MessageFlagIsComponentsV2

// newMessageLocked builds, checks and stores a message a bot sends for an
// interaction. The caller holds s.mu.
func (s *Server) newMessageLocked(in *interaction, p *messagePayload, files []File, now time.Time) (*Message, *restResponse) {
	m := &Message{}
	if p.Content != nil {
		m.Content = *p.Content
	}
	if p.Embeds != nil {
		m.Embeds = *p.Embeds
	}
	if len(p.Components) > 0 && string(p.Components) != "null" {
		m.Components = bytes.Clone(p.Components)
	}
	if p.Flags != nil {
		if *p.Flags&^sendableFlags != 0 {
			rs := invalidForm(map[string]any{"flags": formError("MESSAGE_FLAGS_INVALID", "Invalid flags")})
			return nil, &rs
		}
		m.Flags = *p.Flags
	}
	m.Attachments = filesToAttachments(files)
	if errRs := checkMessage(m, len(p.Poll) > 0 && string(p.Poll) != "null"); errRs != nil {
		return nil, errRs
	}
	return s.storeBotMessageLocked(in, m, now), nil
}

// storeBotMessageLocked stores a message the bot sent for an interaction.
// The caller holds s.mu.
func (s *Server) storeBotMessageLocked(in *interaction, m *Message, now time.Time) *Message {
	m.ID = s.newIDLocked(now)
	m.ChannelID, m.GuildID = in.channelID, in.guildID
	m.AuthorID = s.botUser.ID
	m.Timestamp = now
	m.InteractionID = in.id
	m.Type = in.messageType()
	m.Attachments = s.fillAttachmentsLocked(in.channelID, m.Attachments, now)
	s.messages[m.ID] = m
	return m
}

// messageType is the type of the messages an interaction's responses make.
func (in *interaction) messageType() discord.MessageType {
	switch {
	case in.targetMessageID != 0:
		return discord.MessageTypeContextMenuCommand
	case in.typ == discord.InteractionTypeApplicationCommand:
		return discord.MessageTypeSlashCommand
	}
	return discord.MessageTypeDefault
}

// filesToAttachments turns uploaded files into attachments.
func filesToAttachments(files []File) []Attachment {
	var out []Attachment
	for _, f := range files {
		out = append(out, Attachment{Filename: f.Name, ContentType: f.ContentType, Size: max(f.Size, 1)})
	}
	return out
}

// editMessageLocked applies an edit to a message: present fields replace,
// new files are added, a deferred message stops loading. The caller holds
// s.mu.
func (s *Server) editMessageLocked(m *Message, p *messagePayload, files []File, now time.Time) *restResponse {
	edited := cloneMessage(m)
	if p.Content != nil {
		edited.Content = *p.Content
	}
	if p.Embeds != nil {
		edited.Embeds = *p.Embeds
	}
	if p.Components != nil {
		if string(p.Components) == "null" {
			edited.Components = nil
		} else {
			edited.Components = bytes.Clone(p.Components)
		}
	}
	if p.Flags != nil {
		edited.Flags = edited.Flags&^discord.MessageFlagSuppressEmbeds | *p.Flags&discord.MessageFlagSuppressEmbeds
	}
	if p.Attachments != nil {
		keep := map[string]bool{}
		for _, raw := range *p.Attachments {
			var a struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(raw, &a) == nil {
				keep[strings.Trim(string(a.ID), `"`)] = true
			}
		}
		var kept []Attachment
		for _, a := range edited.Attachments {
			if keep[a.ID.String()] {
				kept = append(kept, a)
			}
		}
		edited.Attachments = kept
	}
	edited.Attachments = append(edited.Attachments, s.fillAttachmentsLocked(m.ChannelID, filesToAttachments(files), now)...)
	if errRs := checkMessage(&edited, false); errRs != nil {
		return errRs
	}
	if edited.Flags.Has(discord.MessageFlagLoading) {
		edited.Flags &^= discord.MessageFlagLoading
	} else {
		edited.EditedAt = now
	}
	*m = edited
	return nil
}

// webhookInteractionLocked finds the interaction of a webhook route and
// checks its token: unknown or expired tokens get 401 (50027); an
// interaction not yet acknowledged has no webhook yet, 404 (10015). The
// caller holds s.mu.
func (s *Server) webhookInteractionLocked(rq *restRequest) (*interaction, *restResponse) {
	in := s.byToken[rq.params["interaction.token"]]
	if rq.params["application.id"] != s.cfg.applicationID.String() {
		rs := unknown(10015, "Unknown Webhook")
		return in, &rs
	}
	if in == nil || rq.now.Sub(in.createdAt) > InteractionTokenLifetime {
		rs := apiErr(http.StatusUnauthorized, 50027, "Invalid Webhook Token")
		return in, &rs
	}
	if !in.acked {
		rs := unknown(10015, "Unknown Webhook")
		return in, &rs
	}
	return in, nil
}

// webhookFail records a refused webhook request if the interaction is known.
func (s *Server) webhookFail(in *interaction, rec Response, rs restResponse) restResponse {
	if in == nil {
		return rs
	}
	return s.recordLocked(in, rec, rs)
}

// originalLocked returns the original response message, or the refusal.
// The caller holds s.mu.
func (s *Server) originalLocked(in *interaction) (*Message, *restResponse) {
	m := s.messages[in.originalID]
	if in.originalID == 0 || m == nil {
		rs := unknown(10008, "Unknown Message")
		return nil, &rs
	}
	return m, nil
}

func (s *Server) handleGetOriginal(rq *restRequest) restResponse {
	in, errRs := s.webhookInteractionLocked(rq)
	if errRs != nil {
		return *errRs
	}
	m, errRs := s.originalLocked(in)
	if errRs != nil {
		return *errRs
	}
	return okJSON(s.wireMessageLocked(m, true))
}

func (s *Server) handleEditOriginal(rq *restRequest) restResponse {
	rec := Response{Kind: KindEditOriginal, At: rq.now}
	in, errRs := s.webhookInteractionLocked(rq)
	raw, files, err := parseBody(rq.r, rq.body)
	rec.Body = bytes.Clone(raw)
	if errRs != nil {
		return s.webhookFail(in, rec, *errRs)
	}
	var p messagePayload
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return s.recordLocked(in, rec, invalidJSON())
	}
	rec.Data = p.data(files)
	m, errRs := s.originalLocked(in)
	if errRs != nil {
		return s.recordLocked(in, rec, *errRs)
	}
	rec.MessageID = m.ID
	if errRs := s.editMessageLocked(m, &p, files, rq.now); errRs != nil {
		return s.recordLocked(in, rec, *errRs)
	}
	in.loading = false
	return s.recordLocked(in, rec, okJSON(s.wireMessageLocked(m, true)))
}

func (s *Server) handleDeleteOriginal(rq *restRequest) restResponse {
	rec := Response{Kind: KindDeleteOriginal, At: rq.now}
	in, errRs := s.webhookInteractionLocked(rq)
	if errRs != nil {
		return s.webhookFail(in, rec, *errRs)
	}
	m, errRs := s.originalLocked(in)
	if errRs != nil {
		return s.recordLocked(in, rec, *errRs)
	}
	rec.MessageID = m.ID
	delete(s.messages, m.ID)
	in.loading = false
	return s.recordLocked(in, rec, noContent())
}

// handleCreateFollowup sends a followup. Right after a deferred callback
// (type 5) the first followup edits the loading message instead, as
// Discord documents.
func (s *Server) handleCreateFollowup(rq *restRequest) restResponse {
	rec := Response{Kind: KindFollowup, At: rq.now}
	in, errRs := s.webhookInteractionLocked(rq)
	raw, files, err := parseBody(rq.r, rq.body)
	rec.Body = bytes.Clone(raw)
	if errRs != nil {
		return s.webhookFail(in, rec, *errRs)
	}
	var p messagePayload
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return s.recordLocked(in, rec, invalidJSON())
	}
	rec.Data = p.data(files)
	if in.loading {
		if m := s.messages[in.originalID]; m != nil {
			rec.MessageID = m.ID
			if errRs := s.editMessageLocked(m, &p, files, rq.now); errRs != nil {
				return s.recordLocked(in, rec, *errRs)
			}
			in.loading = false
			return s.recordLocked(in, rec, okJSON(s.wireMessageLocked(m, true)))
		}
	}
	m, errRs := s.newMessageLocked(in, &p, files, rq.now)
	if errRs != nil {
		return s.recordLocked(in, rec, *errRs)
	}
	in.followups = append(in.followups, m.ID)
	rec.MessageID = m.ID
	return s.recordLocked(in, rec, okJSON(s.wireMessageLocked(m, true)))
}

// followupLocked returns a message of an interaction by ID: a followup or
// the original. The caller holds s.mu.
func (s *Server) followupLocked(in *interaction, raw string) (*Message, *restResponse) {
	id, err := snowflake.Parse(raw)
	m := s.messages[id]
	if err != nil || m == nil || (id != in.originalID && !containsID(in.followups, id)) {
		rs := unknown(10008, "Unknown Message")
		return nil, &rs
	}
	return m, nil
}

func containsID(ids []snowflake.ID, id snowflake.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func (s *Server) handleGetFollowup(rq *restRequest) restResponse {
	in, errRs := s.webhookInteractionLocked(rq)
	if errRs != nil {
		return *errRs
	}
	m, errRs := s.followupLocked(in, rq.params["message.id"])
	if errRs != nil {
		return *errRs
	}
	return okJSON(s.wireMessageLocked(m, true))
}

func (s *Server) handleEditFollowup(rq *restRequest) restResponse {
	rec := Response{Kind: KindEditFollowup, At: rq.now}
	in, errRs := s.webhookInteractionLocked(rq)
	raw, files, err := parseBody(rq.r, rq.body)
	rec.Body = bytes.Clone(raw)
	if errRs != nil {
		return s.webhookFail(in, rec, *errRs)
	}
	var p messagePayload
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return s.recordLocked(in, rec, invalidJSON())
	}
	rec.Data = p.data(files)
	m, errRs := s.followupLocked(in, rq.params["message.id"])
	if errRs != nil {
		return s.recordLocked(in, rec, *errRs)
	}
	rec.MessageID = m.ID
	if errRs := s.editMessageLocked(m, &p, files, rq.now); errRs != nil {
		return s.recordLocked(in, rec, *errRs)
	}
	return s.recordLocked(in, rec, okJSON(s.wireMessageLocked(m, true)))
}

func (s *Server) handleDeleteFollowup(rq *restRequest) restResponse {
	rec := Response{Kind: KindDeleteFollowup, At: rq.now}
	in, errRs := s.webhookInteractionLocked(rq)
	if errRs != nil {
		return s.webhookFail(in, rec, *errRs)
	}
	m, errRs := s.followupLocked(in, rq.params["message.id"])
	if errRs != nil {
		return s.recordLocked(in, rec, *errRs)
	}
	rec.MessageID = m.ID
	delete(s.messages, m.ID)
	return s.recordLocked(in, rec, noContent())
}
