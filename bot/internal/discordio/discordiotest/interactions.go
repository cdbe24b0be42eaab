package discordiotest

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// interaction is the Fake's record of an interaction a builder made,
// guarded by Fake.mu.
type interaction struct {
	id        snowflake.ID
	token     string
	typ       discord.InteractionType
	channelID snowflake.ID
	createdAt time.Time
	expired   bool
	// componentMsg is the message a component is on.
	componentMsg snowflake.ID

	response  *discord.InteractionResponse
	original  snowflake.ID // 0 until a response makes or names one
	edits     []discord.MessageUpdate
	followups []discord.MessageCreate
}

// Expire ends an interaction's token, as TokenLifetime does: then every
// request with it answers 404, Unknown Webhook (10015) or, for Respond,
// Unknown interaction (10062).
func (f *Fake) Expire(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.inters[token]
	if in == nil {
		f.fatalf("Expire: unknown token %q", token)
	}
	in.expired = true
}

func (in *interaction) expiredAt(now time.Time) bool {
	return in.expired || now.Sub(in.createdAt) >= TokenLifetime
}

// Respond takes an interaction's initial response, as Discord does: 404
// Unknown interaction (10062) for an unknown ID or token, or later than
// InteractionDeadline after the interaction; 400 already acknowledged
// (40060) for a second one; 400 Invalid Form Body (50035) for a type the
// interaction does not take, or data of the wrong kind.
//
// A message (4) or deferral (5) makes the original response, a loading
// one for a deferral (ephemeral if its data says so); an update (7) edits
// the component's message, which a deferred update (6) makes the
// original; autocomplete choices (8) and modals (9) make none.
func (f *Fake) Respond(ctx context.Context, id snowflake.ID, token string, r discord.InteractionResponse) error {
	return f.call(ctx, OpRespond, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		in := f.inters[token]
		if in == nil || in.id != id {
			return unknownInteraction()
		}
		if in.response != nil {
			return refusal(http.StatusBadRequest, discordio.CodeAlreadyAcknowledged, "Interaction has already been acknowledged.")
		}
		now := f.nowLocked()
		if in.expired || now.Sub(in.createdAt) > InteractionDeadline {
			return unknownInteraction()
		}
		if !discordtest.CallbackAllowed(in.typ, r.Type) {
			return invalidForm("type: Invalid interaction response type")
		}
		if err := f.applyResponseLocked(in, r); err != nil {
			return err
		}
		in.response = &r
		return nil
	})
}

func (f *Fake) applyResponseLocked(in *interaction, r discord.InteractionResponse) error {
	ch := f.channels[in.channelID]
	switch r.Type {
	case discord.InteractionResponseTypeCreateMessage:
		c, ok := dataAs[discord.MessageCreate](r.Data)
		if !ok {
			return invalidForm("data: Invalid message")
		}
		m, err := fromCreate(c)
		if err != nil {
			return err
		}
		in.original = f.storeResponseLocked(ch, &m)
	case discord.InteractionResponseTypeDeferredCreateMessage:
		m := discord.Message{Flags: discord.MessageFlagLoading}
		if c, ok := dataAs[discord.MessageCreate](r.Data); ok {
			m.Flags |= c.Flags & discord.MessageFlagEphemeral
		}
		in.original = f.storeResponseLocked(ch, &m)
	case discord.InteractionResponseTypeDeferredUpdateMessage:
		in.original = in.componentMsg
	case discord.InteractionResponseTypeUpdateMessage:
		u, ok := dataAs[discord.MessageUpdate](r.Data)
		if !ok {
			return invalidForm("data: Invalid message")
		}
		m := f.messages[in.componentMsg]
		if m == nil {
			return unknownMessage()
		}
		if err := applyUpdate(m, u); err != nil {
			return err
		}
		f.fillAttachmentsLocked(m)
		in.original = m.ID
	case discord.InteractionResponseTypeAutocompleteResult:
		a, ok := dataAs[discord.AutocompleteResult](r.Data)
		if !ok || len(a.Choices) > 25 {
			return invalidForm("data.choices: Must be 25 or fewer in length.")
		}
	case discord.InteractionResponseTypeModal:
		m, ok := dataAs[discord.ModalCreate](r.Data)
		if !ok || m.CustomID == "" || m.Title == "" || len(m.Components) == 0 {
			return invalidForm("data: A modal needs a title, a custom_id and components")
		}
	}
	return nil
}

// storeResponseLocked stores a message the bot sent for an interaction
// and returns its ID.
func (f *Fake) storeResponseLocked(ch *channel, m *discord.Message) snowflake.ID {
	m.ID = f.newIDLocked()
	m.Author = *f.users[f.botID]
	m.ApplicationID = ptr(f.appID)
	m.WebhookID = ptr(f.appID)
	f.storeMessageLocked(ch, m)
	return m.ID
}

// dataAs is response data of type T, given as a T or a non-nil *T.
func dataAs[T any](d discord.InteractionResponseData) (T, bool) {
	switch d := any(d).(type) {
	case T:
		return d, true
	case *T:
		if d != nil {
			return *d, true
		}
	}
	var zero T
	return zero, false
}

// webhookLocked finds the live interaction of a token: 404 Unknown
// Webhook (10015) for an unknown or expired token.
func (f *Fake) webhookLocked(token string) (*interaction, error) {
	in := f.inters[token]
	if in == nil || in.expiredAt(f.nowLocked()) {
		return nil, unknownWebhook()
	}
	return in, nil
}

// originalLocked is an interaction's original response: 404 Unknown
// Message (10008) while there is none.
func (f *Fake) originalLocked(in *interaction) (*discord.Message, error) {
	m := f.messages[in.original]
	if in.original == 0 || m == nil {
		return nil, unknownMessage()
	}
	return m, nil
}

// Original fetches the original response: 404 Unknown Webhook (10015) for
// an unknown or expired token, 404 Unknown Message (10008) before a
// response made one.
func (f *Fake) Original(ctx context.Context, token string) (*discord.Message, error) {
	var out *discord.Message
	err := f.call(ctx, OpOriginal, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		in, err := f.webhookLocked(token)
		if err != nil {
			return err
		}
		m, err := f.originalLocked(in)
		if err != nil {
			return err
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

// EditOriginal edits the original response: 404 Unknown Webhook (10015)
// for an unknown or expired token, 404 Unknown Message (10008) while there
// is none, 400 for an edit that leaves it empty or oversized. Editing a
// deferral's loading message ends its loading.
func (f *Fake) EditOriginal(ctx context.Context, token string, u discord.MessageUpdate) error {
	return f.call(ctx, OpEditOriginal, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		in, err := f.webhookLocked(token)
		if err != nil {
			return err
		}
		m, err := f.originalLocked(in)
		if err != nil {
			return err
		}
		loading := m.Flags.Has(discord.MessageFlagLoading)
		if err := applyUpdate(m, u); err != nil {
			return err
		}
		if !loading {
			m.EditedTimestamp = ptr(f.nowLocked())
		}
		f.fillAttachmentsLocked(m)
		in.edits = append(in.edits, u)
		return nil
	})
}

// Followup sends a followup message: 404 Unknown Webhook (10015) for an
// unknown or expired token, or before the initial response (the webhook
// exists from then on); 400 for an empty or oversized message. The first
// followup after a deferral fills the loading original response, as on
// Discord; later ones are new messages.
func (f *Fake) Followup(ctx context.Context, token string, c discord.MessageCreate) error {
	return f.call(ctx, OpFollowup, func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		in, err := f.webhookLocked(token)
		if err != nil {
			return err
		}
		if in.response == nil {
			return unknownWebhook()
		}
		m, err := fromCreate(c)
		if err != nil {
			return err
		}
		if orig := f.messages[in.original]; orig != nil && orig.Flags.Has(discord.MessageFlagLoading) {
			m.ID, m.CreatedAt = orig.ID, orig.CreatedAt
			m.Flags |= orig.Flags & discord.MessageFlagEphemeral
			m.Author, m.ApplicationID, m.WebhookID = orig.Author, orig.ApplicationID, orig.WebhookID
			f.storeMessageLocked(f.channels[in.channelID], &m)
		} else {
			f.storeResponseLocked(f.channels[in.channelID], &m)
		}
		in.followups = append(in.followups, c)
		return nil
	})
}

// Response is the initial response Discord took for a token, if any.
func (f *Fake) Response(token string) (discord.InteractionResponse, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.inters[token]
	if in == nil || in.response == nil {
		return discord.InteractionResponse{}, false
	}
	return *in.response, true
}

// Edits are the edits of a token's original response Discord took, in
// order.
func (f *Fake) Edits(token string) []discord.MessageUpdate {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in := f.inters[token]; in != nil {
		return slices.Clone(in.edits)
	}
	return nil
}

// Followups are the followups Discord took for a token, in order.
func (f *Fake) Followups(token string) []discord.MessageCreate {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in := f.inters[token]; in != nil {
		return slices.Clone(in.followups)
	}
	return nil
}

// Shown is a token's original response as the user sees it now, after
// every edit, and whether there is one.
func (f *Fake) Shown(token string) (discord.Message, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.inters[token]
	if in == nil {
		return discord.Message{}, false
	}
	m, err := f.originalLocked(in)
	if err != nil {
		return discord.Message{}, false
	}
	c, err := cloneMessage(m)
	if err != nil {
		f.t.Error(err)
		return discord.Message{}, false
	}
	return c, true
}

// Text is the content of a token's original response as the user sees it
// now: "" while there is none, or while it is still loading.
func (f *Fake) Text(token string) string {
	m, _ := f.Shown(token)
	return m.Content
}
