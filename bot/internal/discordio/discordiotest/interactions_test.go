package discordiotest

import (
	"net/http"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

func TestDeferThenEdit(t *testing.T) {
	w := newWorld(t)
	f := w.f
	i := f.SlashCommand(w.in(), "pin", Opt{Name: "messages", Value: w.message.ID.String()})

	_, err := f.Original(bg, i.Token())
	wantRefusal(t, "Original before a response", err, http.StatusNotFound, 10008)
	wantRefusal(t, "EditOriginal before a response", f.EditOriginal(bg, i.Token(), text("x")), http.StatusNotFound, 10008)
	wantRefusal(t, "Followup before a response", f.Followup(bg, i.Token(), discord.MessageCreate{Content: "x"}), http.StatusNotFound, 10015)

	wantOK(t, "Respond", f.Respond(bg, i.ID(), i.Token(), deferral))
	if r, ok := f.Response(i.Token()); !ok || r.Type != discord.InteractionResponseTypeDeferredCreateMessage {
		t.Fatalf("Response = %+v, %v", r, ok)
	}
	orig, err := f.Original(bg, i.Token())
	wantOK(t, "Original of a deferral", err)
	if !orig.Flags.Has(discord.MessageFlagLoading) || !orig.Flags.Has(discord.MessageFlagEphemeral) || orig.Content != "" {
		t.Fatalf("deferred original = %+v, want a loading ephemeral message", orig)
	}
	if f.Text(i.Token()) != "" {
		t.Fatalf("Text while loading = %q", f.Text(i.Token()))
	}

	err = f.Respond(bg, i.ID(), i.Token(), deferral)
	wantRefusal(t, "second Respond", err, http.StatusBadRequest, discordio.CodeAlreadyAcknowledged)
	if !discordio.Refused(err) {
		t.Fatal("Refused(already acknowledged) = false")
	}

	wantRefusal(t, "an edit leaving nothing", f.EditOriginal(bg, i.Token(), text("")), http.StatusBadRequest, 50006)
	wantOK(t, "EditOriginal", f.EditOriginal(bg, i.Token(), text("Pinning 1 image…")))
	row := []discord.LayoutComponent{discord.ActionRowComponent{Components: []discord.InteractiveComponent{
		discord.ButtonComponent{Style: discord.ButtonStyleSecondary, Label: "Queue", CustomID: "queue:all"},
	}}}
	wantOK(t, "EditOriginal", f.EditOriginal(bg, i.Token(), discord.MessageUpdate{Content: ptr("Pinned 1 image. 12-hour pins: 1/100"), Components: &row}))
	if got := f.Text(i.Token()); got != "Pinned 1 image. 12-hour pins: 1/100" {
		t.Fatalf("Text = %q, want the last edit", got)
	}
	shown, _ := f.Shown(i.Token())
	if shown.Flags.Has(discord.MessageFlagLoading) || len(shown.Components) != 1 || shown.EditedTimestamp == nil {
		t.Fatalf("shown = %+v, want not loading, one row, edited", shown)
	}
	if n := len(f.Edits(i.Token())); n != 2 {
		t.Fatalf("Edits = %d, want the 2 accepted", n)
	}
	// Components only: the content stays.
	wantOK(t, "EditOriginal components", f.EditOriginal(bg, i.Token(), discord.MessageUpdate{Components: &[]discord.LayoutComponent{}}))
	if shown, _ := f.Shown(i.Token()); shown.Content != "Pinned 1 image. 12-hour pins: 1/100" || len(shown.Components) != 0 {
		t.Fatalf("after removing the components: %+v", shown)
	}
}

func TestFollowups(t *testing.T) {
	w := newWorld(t)
	f := w.f
	i := f.SlashCommand(w.in(), "queue")
	wantOK(t, "Respond", f.Respond(bg, i.ID(), i.Token(), deferral))
	wantOK(t, "first Followup", f.Followup(bg, i.Token(), discord.MessageCreate{Content: "first"}))
	if got := f.Text(i.Token()); got != "first" {
		t.Fatalf("the first followup after a deferral fills the original: Text = %q", got)
	}
	wantOK(t, "second Followup", f.Followup(bg, i.Token(), discord.MessageCreate{Content: "second"}))
	if got := f.Text(i.Token()); got != "first" {
		t.Fatalf("a later followup changed the original: %q", got)
	}
	fs := f.Followups(i.Token())
	if len(fs) != 2 || fs[0].Content != "first" || fs[1].Content != "second" {
		t.Fatalf("Followups = %+v", fs)
	}
	wantRefusal(t, "empty followup", f.Followup(bg, i.Token(), discord.MessageCreate{}), http.StatusBadRequest, 50006)
}

func TestRespondMessage(t *testing.T) {
	w := newWorld(t)
	f := w.f
	i := f.SlashCommand(w.in(), "settings")
	wantRefusal(t, "empty message", f.Respond(bg, i.ID(), i.Token(), discord.InteractionResponse{
		Type: discord.InteractionResponseTypeCreateMessage, Data: discord.MessageCreate{},
	}), http.StatusBadRequest, 50006)
	wantRefusal(t, "an update to a command", f.Respond(bg, i.ID(), i.Token(), discord.InteractionResponse{
		Type: discord.InteractionResponseTypeDeferredUpdateMessage,
	}), http.StatusBadRequest, 50035)
	wantRefusal(t, "another interaction's ID", f.Respond(bg, i.ID()+1, i.Token(), deferral), http.StatusNotFound, discordio.CodeUnknownInteraction)
	wantRefusal(t, "an unknown token", f.Respond(bg, i.ID(), "nope", deferral), http.StatusNotFound, discordio.CodeUnknownInteraction)
	wantOK(t, "Respond with a message", f.Respond(bg, i.ID(), i.Token(), discord.InteractionResponse{
		Type: discord.InteractionResponseTypeCreateMessage,
		Data: &discord.MessageCreate{Content: "Accounts: none", Flags: discord.MessageFlagEphemeral},
	}))
	if got := f.Text(i.Token()); got != "Accounts: none" {
		t.Fatalf("Text = %q", got)
	}
}

func TestComponentResponses(t *testing.T) {
	w := newWorld(t)
	f := w.f
	b := f.Button(w.in(), "queue:all", 0)
	wantOK(t, "deferred update", f.Respond(bg, b.ID(), b.Token(), discord.InteractionResponse{Type: discord.InteractionResponseTypeDeferredUpdateMessage}))
	orig, err := f.Original(bg, b.Token())
	wantOK(t, "Original of a deferred update", err)
	if orig.ID != b.Message.ID {
		t.Fatalf("original = message %d, want the button's %d", orig.ID, b.Message.ID)
	}
	wantOK(t, "EditOriginal", f.EditOriginal(bg, b.Token(), text("refreshed")))
	m, err := f.Message(bg, w.channel, b.Message.ID)
	wantOK(t, "Message", err)
	if m.Content != "refreshed" || len(m.Components) != 1 {
		t.Fatalf("the button's message after the edit = %+v, want the new content and its row", m)
	}

	s := f.StringSelect(w.in(), "settings:switch", b.Message.ID, "alice_art")
	wantOK(t, "update", f.Respond(bg, s.ID(), s.Token(), discord.InteractionResponse{
		Type: discord.InteractionResponseTypeUpdateMessage, Data: discord.MessageUpdate{Content: ptr("switched")},
	}))
	if got := f.Text(s.Token()); got != "switched" {
		t.Fatalf("Text after an update = %q", got)
	}
}

func TestAutocompleteResponse(t *testing.T) {
	w := newWorld(t)
	f := w.f
	a := f.Autocomplete(w.in(), "unlink", Opt{Name: "account", Value: "al", Focused: true})
	wantRefusal(t, "a deferral of autocomplete", f.Respond(bg, a.ID(), a.Token(), deferral), http.StatusBadRequest, 50035)
	choices := discord.AutocompleteResult{Choices: []discord.AutocompleteChoice{discord.AutocompleteChoiceString{Name: "alice_art", Value: "alice_art"}}}
	wantOK(t, "choices", f.Respond(bg, a.ID(), a.Token(), discord.InteractionResponse{Type: discord.InteractionResponseTypeAutocompleteResult, Data: choices}))
	r, ok := f.Response(a.Token())
	if got, _ := r.Data.(discord.AutocompleteResult); !ok || len(got.Choices) != 1 {
		t.Fatalf("Response = %+v", r)
	}
	if _, ok := f.Shown(a.Token()); ok {
		t.Fatal("autocomplete choices made an original response")
	}
}

func TestDeadlineAndExpiry(t *testing.T) {
	w := newWorld(t)
	f := w.f

	late := f.SlashCommand(w.in(), "pin")
	f.Advance(InteractionDeadline)
	wantOK(t, "Respond at the deadline", f.Respond(bg, late.ID(), late.Token(), deferral))
	later := f.SlashCommand(w.in(), "pin")
	f.Advance(InteractionDeadline + time.Millisecond)
	err := f.Respond(bg, later.ID(), later.Token(), deferral)
	wantRefusal(t, "Respond after the deadline", err, http.StatusNotFound, discordio.CodeUnknownInteraction)
	if !discordio.NotFound(err) || !discordio.Refused(err) {
		t.Fatal("a late Respond is not NotFound and Refused")
	}

	// late's token lives TokenLifetime from its creation.
	f.Advance(TokenLifetime - 2*InteractionDeadline - 2*time.Millisecond)
	wantOK(t, "EditOriginal just before expiry", f.EditOriginal(bg, late.Token(), text("done")))
	f.Advance(time.Millisecond)
	for name, err := range map[string]error{
		"EditOriginal": f.EditOriginal(bg, late.Token(), text("too late")),
		"Followup":     f.Followup(bg, late.Token(), discord.MessageCreate{Content: "too late"}),
		"Original": func() error {
			_, err := f.Original(bg, late.Token())
			return err
		}(),
	} {
		wantRefusal(t, name+" after expiry", err, http.StatusNotFound, 10015)
	}
	if got := f.Text(late.Token()); got != "done" {
		t.Fatalf("Text = %q, want the last edit before expiry", got)
	}

	// Expire ends a token at once.
	now := f.SlashCommand(w.in(), "pin")
	wantOK(t, "Respond", f.Respond(bg, now.ID(), now.Token(), deferral))
	f.Expire(now.Token())
	wantRefusal(t, "EditOriginal of an expired token", f.EditOriginal(bg, now.Token(), text("x")), http.StatusNotFound, 10015)
	_, err = f.Original(bg, "unknown")
	wantRefusal(t, "Original of an unknown token", err, http.StatusNotFound, 10015)
	fresh := f.SlashCommand(w.in(), "pin")
	f.Expire(fresh.Token())
	wantRefusal(t, "Respond with an expired token", f.Respond(bg, fresh.ID(), fresh.Token(), deferral), http.StatusNotFound, discordio.CodeUnknownInteraction)
}

func TestWithClock(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	w := newWorld(t, WithClock(func() time.Time { return at }))
	i := w.f.SlashCommand(w.in(), "pin")
	if !i.CreatedAt().Equal(at) {
		t.Fatalf("CreatedAt = %v, want the clock's %v", i.CreatedAt(), at)
	}
	at = at.Add(TokenLifetime)
	_, err := w.f.Original(bg, i.Token())
	wantRefusal(t, "Original once the clock passed the lifetime", err, http.StatusNotFound, 10015)
}
