package bot

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/internal/discordio/discordiotest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/limit/schedule/scheduletest"
	"github.com/pinbot/pinbot/internal/metrics"
)

// The handlers' tests on the in-memory Discord (discordiotest): each
// command of the table is run by HandleInteraction, as the gateway hands
// it over, with no Discord socket; the engine, the links store and the
// Pinterest stand-in are the real ones (backends), the stand-in served
// in process.

// fakeWorld is the bot on the in-memory Discord, with one guild and one
// channel everyone may read.
type fakeWorld struct {
	*backends
	t   testing.TB
	ctx context.Context
	dc  *discordiotest.Fake
	bot *Bot
	// digests is the digests' clock.
	digests *scheduletest.Clock
	guild   snowflake.ID
	channel snowflake.ID
}

func newFakeWorld(t testing.TB, opts ...func(*worldOptions)) *fakeWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	w := &fakeWorld{t: t, ctx: ctx, dc: discordiotest.New(t), digests: scheduletest.NewClock(t0)}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	m := metrics.New()
	// Queued jobs wait: none is due while the engine's clock stands still.
	o := worldOptions{onJob: func(actors.Job) {}, pinterestInProcess: true}
	for _, f := range opts {
		f(&o)
	}
	w.backends = newBackends(t, ctx, o, log, m)
	token := base64.RawStdEncoding.EncodeToString([]byte(w.dc.AppID().String())) + ".x.y"
	b, err := newBot(Config{
		Token:       token,
		Engine:      w.engine,
		Links:       w.links,
		Pinterest:   w.pc,
		Log:         log,
		Now:         w.pclock.Now,
		NoUserRate:  true,
		Observer:    m.Bot(InteractionLabels()),
		DigestClock: w.digests,
		Peers:       o.peers,
	}, w.dc)
	if err != nil {
		t.Fatal(err)
	}
	w.bot = b
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("bot.Close: %v", err)
		}
	})
	w.guild = w.dc.AddGuild("home")
	w.channel = w.dc.AddChannel(w.guild)
	return w
}

// user adds a member to the world's guild.
func (w *fakeWorld) user(name string) snowflake.ID {
	return w.dc.AddMember(w.guild, w.dc.AddUser(name))
}

// images adds a message with n image attachments to the world's channel.
func (w *fakeWorld) images(n int, text string) discord.Message {
	atts := make([]discord.Attachment, n)
	for i := range atts {
		w, h := 640, 480
		atts[i] = discord.Attachment{Filename: fmt.Sprintf("img%d.png", i), ContentType: new("image/png"), Width: &w, Height: &h}
	}
	return w.dc.AddMessage(w.channel, discord.Message{Content: text, Attachments: atts})
}

// at is an invocation by user in the world's channel.
func (w *fakeWorld) at(user snowflake.ID) discordiotest.Invocation {
	return discordiotest.Invocation{UserID: user, ChannelID: w.channel}
}

// run hands i to the bot and returns what its user reads once the bot is
// done with it, having checked how it was acknowledged: an ephemeral
// deferral, or a deferred update of a /queue component's message.
func (w *fakeWorld) run(i discord.Interaction) string {
	w.t.Helper()
	w.bot.HandleInteraction(i)
	r, ok := w.dc.Response(i.Token())
	if !ok {
		w.t.Fatalf("interaction %d: no initial response", i.ID())
	}
	if ci, ok := i.(discord.ComponentInteraction); ok && strings.HasPrefix(ci.Data.CustomID(), idQueue) {
		if r.Type != discord.InteractionResponseTypeDeferredUpdateMessage {
			w.t.Fatalf("interaction %d: initial response type %d, want a deferred update", i.ID(), r.Type)
		}
	} else if mc, ok := r.Data.(discord.MessageCreate); r.Type != discord.InteractionResponseTypeDeferredCreateMessage || !ok || !mc.Flags.Has(discord.MessageFlagEphemeral) {
		w.t.Fatalf("interaction %d: initial response %+v, want an ephemeral deferral", i.ID(), r)
	}
	parts := []string{w.dc.Text(i.Token())}
	for _, f := range w.dc.Followups(i.Token()) {
		parts = append(parts, f.Content)
	}
	return strings.Join(parts, "\n")
}

// shown returns the message the bot's last reply to i left, with its
// components.
func (w *fakeWorld) shown(i discord.Interaction) discord.Message {
	w.t.Helper()
	m, ok := w.dc.Shown(i.Token())
	if !ok {
		w.t.Fatalf("interaction %d: nothing shown", i.ID())
	}
	return m
}

// choices runs an autocomplete interaction and returns the choices'
// names.
func (w *fakeWorld) choices(i discord.AutocompleteInteraction) []string {
	w.t.Helper()
	w.bot.HandleInteraction(i)
	r, ok := w.dc.Response(i.Token())
	if !ok || r.Type != discord.InteractionResponseTypeAutocompleteResult {
		w.t.Fatalf("autocomplete %d: response %+v, want choices", i.ID(), r)
	}
	res, ok := r.Data.(discord.AutocompleteResult)
	if !ok {
		w.t.Fatalf("autocomplete %d: data %T", i.ID(), r.Data)
	}
	var names []string
	for _, c := range res.Choices {
		names = append(names, c.ChoiceName())
	}
	return names
}

func TestHandlerPin(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	m := w.images(2, "Two cats")

	text := w.run(w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()}))
	must(t, text, "Pinterest account @alicepins, board **Board of alicepins**: 2 pinned.",
		"(image 1 of 2) → <https://www.pinterest.com/pin/", "12-hour pin count: 1/100",
		"(image 2 of 2) → <https://www.pinterest.com/pin/", "12-hour pin count: 2/100")
	pins := w.ps.PinsFor("1001")
	if len(pins) != 2 {
		t.Fatalf("%d pins on Pinterest, want 2", len(pins))
	}
	jump := fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild, w.channel, m.ID)
	for i, p := range pins {
		if !markedLink(p.Link, jump) || p.Title != "Two cats" || p.ImageURL != m.Attachments[i].URL {
			t.Errorf("pin %d = %+v; want link %s, title %q, the attachment's URL", i, p, jump, "Two cats")
		}
	}
	if n := w.used("1001"); n != 2 {
		t.Fatalf("engine count %d, want 2", n)
	}

	// A message in a channel the user may not view is not fetched.
	hidden := w.dc.AddChannel(w.guild, discord.RolePermissionOverwrite{RoleID: w.guild, Deny: discord.PermissionViewChannel})
	secret := w.dc.AddMessage(hidden, discord.Message{Attachments: []discord.Attachment{{Filename: "s.png", ContentType: new("image/png")}}})
	link := fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild, hidden, secret.ID)
	before := w.dc.Calls(discordiotest.OpMessage)
	text = w.run(w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: link}))
	must(t, text, "you cannot view that channel")
	if w.dc.Calls(discordiotest.OpMessage) != before || len(w.ps.PinsFor("1001")) != 2 {
		t.Fatalf("the hidden message was fetched or pinned")
	}
}

func TestHandlerPinMessage(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "alicepins")
	m := w.images(1, "A dog")

	text := w.run(w.dc.MessageCommand(w.at(alice), cmdPinMessage, m.ID))
	must(t, text, "Pinterest account @alicepins, board **Board of alicepins**: 1 pinned.", "12-hour pin count: 1/100")
	if pins := w.ps.PinsFor("1001"); len(pins) != 1 || pins[0].Title != "A dog" {
		t.Fatalf("pins %+v, want one titled A dog", pins)
	}

	// Without a linked account nothing is fetched or pinned.
	bob := w.user("bob")
	text = w.run(w.dc.MessageCommand(w.at(bob), cmdPinMessage, m.ID))
	must(t, text, msgNoAccount)
	if n := len(w.ps.PinsFor("1001")); n != 1 {
		t.Fatalf("%d pins, want 1", n)
	}
}

func TestHandlerSettings(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	text := w.run(w.dc.SlashCommand(w.at(alice), cmdSettings))
	must(t, text, msgNoAccount)

	w.link(alice, "2002", "second")
	w.link(alice, "1001", "first")
	w.ps.AddAccount("1001", "first", pinteresttest.Board{ID: "b9", Name: "Dogs"})
	w.fill("1001", 7)
	in := w.dc.SlashCommand(w.at(alice), cmdSettings)
	text = w.run(in)
	must(t, text, "**Your Pinterest accounts**",
		"• @second — 12-hour pins: 0/100 — default board: **Board of second**",
		"▶ @first (active) — 12-hour pins: 7/100 — default board: **Board of first**")
	var ids []string
	for c := range w.shown(in).AllComponents() {
		if ic, ok := c.(discord.InteractiveComponent); ok {
			ids = append(ids, ic.GetCustomID())
		}
	}
	for _, want := range []string{idSwitch, idBoard + "/1001", idWhenFull} {
		if !slices.Contains(ids, want) {
			t.Errorf("components %q lack %s", ids, want)
		}
	}
}

func TestHandlerSwitch(t *testing.T) {
	w := newFakeWorld(t)
	alice, mallory := w.user("alice"), w.user("mallory")
	w.link(alice, "2002", "second")
	w.link(alice, "1001", "first")
	w.link(mallory, "6666", "mallorypins")

	text := w.run(w.dc.StringSelect(w.at(alice), idSwitch, 0, "2002"))
	must(t, text, "@second")
	if u, err := w.links.User(w.ctx, alice.String()); err != nil || u.Active != "2002" {
		t.Fatalf("active %+v (%v), want 2002", u, err)
	}
	// Someone else's account is refused.
	text = w.run(w.dc.StringSelect(w.at(alice), idSwitch, 0, "6666"))
	must(t, text, msgNotLinked)
	if u, _ := w.links.User(w.ctx, alice.String()); u.Active != "2002" {
		t.Fatalf("active %s after a refused switch, want 2002", u.Active)
	}
	text = w.run(w.dc.StringSelect(w.at(alice), idSwitch, 0))
	must(t, text, "Pick one account from the menu.")
}

func TestHandlerDefaultBoard(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "first")
	w.ps.AddAccount("1001", "first", pinteresttest.Board{ID: "b9", Name: "Dogs_and*cats"})

	text := w.run(w.dc.StringSelect(w.at(alice), idBoard+"/1001", 0, "b9"))
	must(t, text, `Default board for @first is now **Dogs\_and\*cats**.`)
	if a, err := w.links.Account(w.ctx, "1001"); err != nil || a.DefaultBoard != "b9" {
		t.Fatalf("account %+v (%v), want default board b9", a, err)
	}
	text = w.run(w.dc.StringSelect(w.at(alice), idBoard+"/1001", 0, "nope"))
	must(t, text, "That board is not one of @first's boards any more.")
	text = w.run(w.dc.StringSelect(w.at(alice), idBoard+"/6666", 0, "b9"))
	must(t, text, msgNotLinked)
}

func TestHandlerWhenFull(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	text := w.run(w.dc.StringSelect(w.at(alice), idWhenFull, 0, whenFullQueue))
	must(t, text, msgNoAccount)

	w.link(alice, "1001", "first")
	text = w.run(w.dc.StringSelect(w.at(alice), idWhenFull, 0, whenFullQueue))
	must(t, text, "At the 12-hour limit, /pin and \"Pin to Pinterest\" now queue the rest")
	if u, err := w.links.User(w.ctx, alice.String()); err != nil || !u.QueueWhenFull {
		t.Fatalf("user %+v (%v), want QueueWhenFull", u, err)
	}
	text = w.run(w.dc.StringSelect(w.at(alice), idWhenFull, 0, whenFullSkip))
	must(t, text, "now skip the rest")
	if u, _ := w.links.User(w.ctx, alice.String()); u.QueueWhenFull {
		t.Fatal("QueueWhenFull still set after choosing skip")
	}
	text = w.run(w.dc.StringSelect(w.at(alice), idWhenFull, 0, "sometimes"))
	must(t, text, "Pick one choice from the menu.")
}

func TestHandlerLink(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	in := w.dc.SlashCommand(w.at(alice), cmdLink)
	text := w.run(in)
	must(t, text, "Open this link to connect a Pinterest account to Pinbot:", "<"+w.ps.AuthURL(), "expires in 10 minutes")
	var button string
	for c := range w.shown(in).AllComponents() {
		if b, ok := c.(discord.ButtonComponent); ok && b.Style == discord.ButtonStyleLink {
			button = b.URL
		}
	}
	if !strings.HasPrefix(button, w.ps.AuthURL()) {
		t.Fatalf("link button %q, want Pinterest's authorization address", button)
	}
}

func TestHandlerUnlink(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "2002", "second")
	w.link(alice, "1001", "first")

	text := w.run(w.dc.SlashCommand(w.at(alice), cmdUnlink, discordiotest.Opt{Name: optAccount, Value: "1001"}))
	must(t, text, "Unlinked @first.", "Your active account is @second.")
	if u, err := w.links.User(w.ctx, alice.String()); err != nil || !slices.Equal(u.Accounts, []string{"2002"}) {
		t.Fatalf("user %+v (%v), want only 2002 linked", u, err)
	}
	text = w.run(w.dc.SlashCommand(w.at(alice), cmdUnlink, discordiotest.Opt{Name: optAccount, Value: "1001"}))
	must(t, text, msgNotLinked)
}

// queueFull fills account to its limit and queues a /pin of m by user.
func (w *fakeWorld) queueFull(user snowflake.ID, account string, ms ...discord.Message) {
	w.t.Helper()
	w.fill(account, 100)
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID.String())
	}
	text := w.run(w.dc.SlashCommand(w.at(user), cmdPin,
		discordiotest.Opt{Name: optMessages, Value: strings.Join(ids, " ")},
		discordiotest.Opt{Name: optWhenFull, Value: whenFullQueue}))
	must(w.t, text, "queued")
}

func TestHandlerQueue(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	text := w.run(w.dc.SlashCommand(w.at(alice), cmdQueue))
	must(t, text, msgNoAccount)
	w.link(alice, "1001", "first")
	text = w.run(w.dc.SlashCommand(w.at(alice), cmdQueue))
	must(t, text, msgQueueEmpty)

	m := w.images(2, "")
	w.queueFull(alice, "1001", m)
	text = w.run(w.dc.SlashCommand(w.at(alice), cmdQueue))
	jump := fmt.Sprintf("https://discord.com/channels/%d/%d/%d", w.guild, w.channel, m.ID)
	must(t, text, msgQueueTitle, "**@first**", "⏳ `1` <"+jump+"> (image 1 of 2) · starts at", "⏳ `1` <"+jump+"> (image 2 of 2) · starts at")
}

func TestHandlerQueueAll(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "first")
	w.queueFull(alice, "1001", w.images(2, ""))

	list := w.dc.SlashCommand(w.at(alice), cmdQueue)
	w.run(list)
	text := w.run(w.dc.Button(w.at(alice), idQueueAll+"/1001", 0))
	must(t, text, "Canceled 2 queued pins.")
	if js := w.waiting("1001"); len(js) != 0 {
		t.Fatalf("%d pins still waiting", len(js))
	}
}

func TestHandlerQueueMessage(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "first")
	m1, m2 := w.images(2, ""), w.images(1, "")
	w.queueFull(alice, "1001", m1, m2)

	text := w.run(w.dc.StringSelect(w.at(alice), idQueueMessage, 0, "1001/"+m1.ID.String()))
	must(t, text, "Canceled 2 queued pins.", msgQueueTitle)
	left := w.waiting("1001")
	if len(left) != 1 {
		t.Fatalf("%d pins waiting, want m2's", len(left))
	}
	if p, err := decodeQueuedPin(left[0].Payload); err != nil || p.Message != m2.ID {
		t.Fatalf("left %+v (%v), want m2's pin", p, err)
	}
	text = w.run(w.dc.StringSelect(w.at(alice), idQueueMessage, 0, "garbage"))
	must(t, text, "Pick one message from the menu.")
}

// waiting returns account's waiting jobs.
func (w *fakeWorld) waiting(account string) []actors.Job {
	w.t.Helper()
	js, _, err := w.engine.Jobs(w.ctx, account)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []actors.Job
	for _, j := range js {
		if j.State == actors.JobWaiting {
			out = append(out, j)
		}
	}
	return out
}

func TestHandlerAutocompletePin(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "first")
	w.ps.AddAccount("1001", "first", pinteresttest.Board{ID: "b9", Name: "Dogs"})

	got := w.choices(w.dc.Autocomplete(w.at(alice), cmdPin, discordiotest.Opt{Name: optBoard, Value: "", Focused: true}))
	if !slices.Equal(got, []string{"Board of first", "Dogs"}) {
		t.Fatalf("choices %q, want both boards", got)
	}
	got = w.choices(w.dc.Autocomplete(w.at(alice), cmdPin, discordiotest.Opt{Name: optBoard, Value: "dog", Focused: true}))
	if !slices.Equal(got, []string{"Dogs"}) {
		t.Fatalf("choices for dog %q, want Dogs", got)
	}
	// Pinterest not answering: no choices, still answered.
	w.ps.Inject(pinteresttest.Fault{Method: "GET", Path: pinteresttest.PathBoards, Times: -1, Status: 503})
	bob := w.user("bob")
	w.link(bob, "2002", "bobs")
	if got := w.choices(w.dc.Autocomplete(w.at(bob), cmdPin, discordiotest.Opt{Name: optBoard, Focused: true})); len(got) != 0 {
		t.Fatalf("choices %q while Pinterest fails, want none", got)
	}
}

func TestHandlerAutocompleteUnlink(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "first")
	w.link(alice, "2002", "second")
	got := w.choices(w.dc.Autocomplete(w.at(alice), cmdUnlink, discordiotest.Opt{Name: optAccount, Value: "sec", Focused: true}))
	if !slices.Equal(got, []string{"@second (2002)"}) {
		t.Fatalf("choices %q, want @second", got)
	}
}

// TestHandlerUnknown: an interaction no entry of the table serves is
// answered, and counted as "other".
func TestHandlerUnknown(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	text := w.run(w.dc.Button(w.at(alice), "/removed/button", 0))
	must(t, text, msgUnknownCommand)
	if got := w.choices(w.dc.Autocomplete(w.at(alice), "gone", discordiotest.Opt{Name: "x", Focused: true})); len(got) != 0 {
		t.Fatalf("choices %q for an unknown command", got)
	}
}

// TestHandlerAcknowledgement: an interaction whose deferral Discord
// refuses is not worked on; one whose deferral's answer was lost, but
// which Discord has, is.
func TestHandlerAcknowledgement(t *testing.T) {
	w := newFakeWorld(t)
	alice := w.user("alice")
	w.link(alice, "1001", "first")
	m := w.images(1, "")

	w.dc.Inject(discordiotest.OpRespond, 1, discordiotest.Fault{Err: &discordio.Error{Status: 400, Code: discordio.CodeAlreadyAcknowledged}})
	in := w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()})
	w.bot.HandleInteraction(in)
	if n := len(w.ps.PinsFor("1001")); n != 0 || len(w.dc.Edits(in.Token())) != 0 {
		t.Fatalf("a refused deferral was worked on: %d pins, %d edits", n, len(w.dc.Edits(in.Token())))
	}

	w.dc.Inject(discordiotest.OpRespond, 1, discordiotest.Fault{Lost: true})
	in = w.dc.SlashCommand(w.at(alice), cmdPin, discordiotest.Opt{Name: optMessages, Value: m.ID.String()})
	w.bot.HandleInteraction(in)
	must(t, w.dc.Text(in.Token()), "1 pinned.")
	if n := len(w.ps.PinsFor("1001")); n != 1 {
		t.Fatalf("%d pins after a lost deferral answer, want 1", n)
	}
}
