package discordiotest

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

// Discord's deadlines for interactions.
const (
	// InteractionDeadline is how long after its creation an interaction
	// takes its initial response (Respond).
	InteractionDeadline = 3 * time.Second
	// TokenLifetime is how long an interaction's token serves Original,
	// EditOriginal and Followup.
	TokenLifetime = 15 * time.Minute
)

// Discord's JSON error codes the Fake answers with, beside those of
// package discordio.
const (
	codeUnknownChannel     = 10003
	codeUnknownGuild       = 10004
	codeUnknownMember      = 10007
	codeUnknownMessage     = 10008
	codeUnknownWebhook     = 10015
	codeEmptyMessage       = 50006
	codeMissingPermissions = 50013
	codeInvalidRecipient   = 50033
	codeInvalidForm        = 50035
)

// refusal is Discord's error answer.
func refusal(status, code int, msg string) error {
	return &discordio.Error{Status: status, Code: code, Message: msg}
}

func unknownChannel() error {
	return refusal(http.StatusNotFound, codeUnknownChannel, "Unknown Channel")
}
func unknownGuild() error  { return refusal(http.StatusNotFound, codeUnknownGuild, "Unknown Guild") }
func unknownMember() error { return refusal(http.StatusNotFound, codeUnknownMember, "Unknown Member") }
func unknownMessage() error {
	return refusal(http.StatusNotFound, codeUnknownMessage, "Unknown Message")
}
func unknownWebhook() error {
	return refusal(http.StatusNotFound, codeUnknownWebhook, "Unknown Webhook")
}

func unknownInteraction() error {
	return refusal(http.StatusNotFound, discordio.CodeUnknownInteraction, "Unknown interaction")
}

func missingAccess() error {
	return refusal(http.StatusForbidden, discordio.CodeMissingAccess, "Missing Access")
}

func invalidForm(what string) error {
	return refusal(http.StatusBadRequest, codeInvalidForm, "Invalid Form Body: "+what)
}

// Fake is discordio.API in memory: a world of guilds, roles, members,
// channels and messages that the test builds, and the interactions made
// by its builders (SlashCommand, MessageCommand, Button, ...). It answers
// as Discord does, with Discord's error codes, records what the bot sends,
// and fails on demand (Inject). Its time moves only when told (Advance),
// or follows the clock of WithClock.
//
// A Fake is safe for concurrent use. Its builders fail the test given to
// New when they refer to an object the world lacks.
type Fake struct {
	t testing.TB

	mu     sync.Mutex
	clock  func() time.Time
	offset time.Duration
	lastID snowflake.ID

	appID snowflake.ID
	botID snowflake.ID

	users     map[snowflake.ID]*discord.User
	dmsClosed map[snowflake.ID]bool
	dmOf      map[snowflake.ID]snowflake.ID // user -> DM channel
	guilds    map[snowflake.ID]*guild
	channels  map[snowflake.ID]*channel
	messages  map[snowflake.ID]*discord.Message

	inters   map[string]*interaction // by token
	sent     map[snowflake.ID][]discord.MessageCreate
	commands []discord.ApplicationCommandCreate
	cmdIDs   map[commandKey]snowflake.ID
	gateway  discordio.GatewayInfo

	calls  map[Op]int
	faults map[Op][]*injected
}

var _ discordio.API = (*Fake)(nil)

// Option configures a Fake.
type Option func(*Fake)

// WithClock makes now the Fake's clock, instead of an instant that stands
// still; Advance still adds to it. The Fake's snowflake IDs carry its
// time. now is called under the Fake's lock: it must not call the Fake.
func WithClock(now func() time.Time) Option { return func(f *Fake) { f.clock = now } }

// WithGateway sets GatewayBot's answer.
func WithGateway(info discordio.GatewayInfo) Option {
	return func(f *Fake) { f.gateway = info }
}

// New returns an empty world with the bot's user and application. Its
// time stands at the instant of the call until Advance moves it.
//
// New installs the bot's JSON decoder for disgo (discordio.InstallDecoder),
// so that the interactions its builders decode are what the bot would
// decode from the gateway.
func New(t testing.TB, opts ...Option) *Fake {
	discordio.InstallDecoder()
	start := time.Now().Truncate(time.Millisecond)
	f := &Fake{
		t:         t,
		clock:     func() time.Time { return start },
		users:     make(map[snowflake.ID]*discord.User),
		dmsClosed: make(map[snowflake.ID]bool),
		dmOf:      make(map[snowflake.ID]snowflake.ID),
		guilds:    make(map[snowflake.ID]*guild),
		channels:  make(map[snowflake.ID]*channel),
		messages:  make(map[snowflake.ID]*discord.Message),
		inters:    make(map[string]*interaction),
		sent:      make(map[snowflake.ID][]discord.MessageCreate),
		cmdIDs:    make(map[commandKey]snowflake.ID),
		gateway:   discordio.GatewayInfo{URL: "wss://gateway.discord.gg", Shards: 1, MaxConcurrency: 1},
		calls:     make(map[Op]int),
		faults:    make(map[Op][]*injected),
	}
	for _, o := range opts {
		o(f)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appID = f.newIDLocked()
	f.botID = f.appID
	f.users[f.botID] = &discord.User{ID: f.botID, Username: "Pinbot", Discriminator: "0", Bot: true}
	return f
}

// AppID is the application's ID.
func (f *Fake) AppID() snowflake.ID { return f.appID }

// BotID is the bot user's ID: AppID, as Discord gives new applications.
func (f *Fake) BotID() snowflake.ID { return f.botID }

// Now is the Fake's time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nowLocked()
}

// Advance moves the Fake's time forward by d: interactions age (see
// InteractionDeadline and TokenLifetime) and new IDs carry the later time.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offset += d
}

func (f *Fake) nowLocked() time.Time { return f.clock().Add(f.offset) }

// newIDLocked returns a fresh snowflake of the Fake's time, above every
// earlier one. The caller holds f.mu.
func (f *Fake) newIDLocked() snowflake.ID {
	id := snowflake.New(f.nowLocked())
	if id <= f.lastID {
		id = f.lastID + 1
	}
	f.lastID = id
	return id
}

// fatalf fails the test for a builder's misuse; the caller holds f.mu,
// which its deferred unlock releases.
func (f *Fake) fatalf(format string, args ...any) {
	f.t.Helper()
	f.t.Fatalf("discordiotest: "+format, args...)
}
