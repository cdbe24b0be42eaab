package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/pinbot/pinbot/internal/limit/schedule"
	"github.com/pinbot/pinbot/internal/limit/schedule/scheduletest"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/gateway"
	"github.com/disgoorg/snowflake/v2"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/internal/discordio"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/links/badgerlinks"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/limit/gcra"
	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

var debugLogs = flag.Bool("bot.debug", false, "write the bot's debug logs to the test log")

// Values the Config tests need to be non-nil; they are never used.
var (
	nonNilEngine    = new(actors.Engine)
	nonNilLinks     = links.Store(new(badgerlinks.Store))
	nonNilPinterest = new(pinterest.Client)
)

// t0 is the fixed instant the test clocks start at.
var t0 = time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)

// testWriter writes log lines to a test's log until the test ends, and
// keeps them for checks on what was logged.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
	all  strings.Builder
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(p)
	if !w.done && *debugLogs {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

// worldOptions tune newWorld.
type worldOptions struct {
	// peers makes the bot a cluster member (Config.Peers).
	peers Peers
	// realDiscordClock makes the Discord stand-in read the wall clock, so
	// that the 3-second deadline is real; otherwise it stands still.
	realDiscordClock bool
	workers          int
	// faults wraps the engine's store in a FaultStore.
	faults bool
	// pinterestHTTP replaces the Pinterest client's HTTP client;
	// pinterestInProcess serves its requests without a socket.
	pinterestHTTP      *http.Client
	pinterestInProcess bool
	quiet              bool // log nothing, not even to the buffer (benchmarks)
	debugLog           bool // keep debug lines too
	// closeTimeout is the bot's CloseTimeout; default 20 s.
	closeTimeout time.Duration
	// timeout bounds the whole test (the world's context); default 2 min.
	timeout time.Duration
	// shards is the shard count the Discord stand-in recommends.
	shards int
	// gateway leaves the commands unsynced and opens no pump: the test
	// calls Start, which opens disgo's gateway.
	gateway bool
	// jobs serves the engine's queued pins with the bot (see
	// world.jobDone), on a fake digest clock.
	jobs bool
	// engine changes the engine's configuration, and store prepares
	// its store before it starts (the rules of an earlier run, say).
	engine func(*actors.Config)
	store  func(persistence.Store)
	// onJob is the engine's Config.OnJob: queued jobs start only with one.
	onJob func(actors.Job)
	// pinterest changes the Pinterest client's configuration, and
	// pinterestServer configures its stand-in.
	pinterest       func(*pinterest.Config)
	pinterestServer []pinteresttest.Option
	// userRate is each user's allowance (Config.UserRate); zero turns
	// it off, so that tests of other things may send any number of
	// commands at one instant.
	userRate gcra.Rate
	// bot changes the bot's configuration.
	bot func(*Config)
}

// world is the bot between the two stand-ins, with a real engine and a
// real links store, driven without opening a disgo gateway: a bare
// websocket client identifies as shard 0 and hands every
// INTERACTION_CREATE to Bot.HandleInteraction.
type world struct {
	t    testing.TB
	ctx  context.Context
	logs *testWriter
	dc   *discordtest.Server
	*backends
	dclock *discordtest.ManualClock // nil with realDiscordClock
	// digestClock is the digests' clock and jobDone receives each queued
	// pin the bot ran, once it has ended (with worldOptions.jobs).
	digestClock *scheduletest.Clock
	jobDone     chan actors.Job
	bot         *Bot

	guild   discordtest.Guild
	channel discordtest.Channel

	mu   sync.Mutex
	done map[snowflake.ID]chan struct{}
	// closeErrOK accepts an error from the bot's Close at cleanup.
	closeErrOK bool
}

func newWorld(t testing.TB, o worldOptions) *world {
	t.Helper()
	timeout := o.timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	w := &world{t: t, ctx: ctx, logs: &testWriter{t: t}, done: map[snowflake.ID]chan struct{}{}}
	m := metrics.New()
	t.Cleanup(func() {
		w.logs.mu.Lock()
		w.logs.done = true
		w.logs.mu.Unlock()
	})
	level := zerolog.InfoLevel
	if *debugLogs || o.debugLog {
		level = zerolog.DebugLevel
	}
	log := zerolog.New(w.logs).Level(level).With().Timestamp().Logger()
	if o.quiet {
		log = zerolog.Nop()
	}

	dopts := []discordtest.Option{discordtest.WithShardCount(max(o.shards, 1)), discordtest.WithMaxConcurrency(max(o.shards, 1))}
	if !o.realDiscordClock {
		w.dclock = discordtest.NewManualClock(t0)
		dopts = append(dopts, discordtest.WithClock(w.dclock.Now))
	}
	w.dc = discordtest.NewServer(dopts...)
	t.Cleanup(w.dc.Close)

	w.backends = newBackends(t, ctx, o, log, m)

	var digestClock schedule.Clock
	if o.jobs {
		w.digestClock = scheduletest.NewClock(t0)
		digestClock = w.digestClock
	}
	bcfg := Config{
		DigestClock:  digestClock,
		Token:        w.dc.Token(),
		APIURL:       w.dc.APIURL(),
		Engine:       w.engine,
		Links:        w.links,
		Pinterest:    w.pc,
		Log:          log,
		Workers:      o.workers,
		CloseTimeout: cmp.Or(o.closeTimeout, 20*time.Second),
		Now:          w.pclock.Now,
		UserRate:     o.userRate,
		NoUserRate:   o.userRate.IsZero(),
		Observer:     w.metrics.Bot(InteractionLabels()),
		DiscordTransport: func(rt http.RoundTripper) http.RoundTripper {
			return w.metrics.Transport(metrics.Discord, rt, nil)
		},
	}
	if o.bot != nil {
		o.bot(&bcfg)
	}
	var err error
	if w.bot, err = New(bcfg); err != nil {
		t.Fatal(err)
	}
	w.metrics.WatchGateway(w.bot.ShardsConnected)
	w.bot.onDone = w.markDone
	// An outcome the engine could not record is tried again at once: no
	// test moves the engine's clock for it.
	w.bot.finishSleep = func(ctx context.Context, _ time.Time) error { return ctx.Err() }
	if o.jobs {
		w.jobDone = make(chan actors.Job, 1024)
		if err := w.engine.ServeJobs(func(j actors.Job) {
			w.bot.RunJob(j)
			w.jobDone <- j
		}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := w.bot.Close(context.Background()); err != nil && !w.closeErrOK {
			t.Errorf("bot.Close: %v", err)
		}
	})
	if !o.gateway {
		if err := w.bot.syncCommands(ctx); err != nil {
			t.Fatal(err)
		}
		for shard := range max(o.shards, 1) {
			p := startPump(t, w.dc, w.bot, shard, max(o.shards, 1))
			t.Cleanup(p.close)
		}
	}

	if w.guild, err = w.dc.AddGuild(discordtest.Guild{Name: "home"}); err != nil {
		t.Fatal(err)
	}
	if w.channel, err = w.dc.AddChannel(discordtest.Channel{GuildID: w.guild.ID, Name: "general"}); err != nil {
		t.Fatal(err)
	}
	return w
}

// backends are what the bot works with apart from Discord: the engine on
// a manual clock, the links store, and the Pinterest client and its
// stand-in, with every report in metrics.
type backends struct {
	t      testing.TB
	ctx    context.Context
	ps     *pinteresttest.Server
	pclock *pinteresttest.Clock
	eclock *actors.ManualClock
	faults *persistencetest.FaultStore
	engine *actors.Engine
	links  links.Store
	pc     *pinterest.Client
	// metrics has every report of the engine, the bot and both clients.
	metrics *metrics.Metrics
}

// newBackends starts the backends of a test's bot, closed at its end.
func newBackends(t testing.TB, ctx context.Context, o worldOptions, log zerolog.Logger, m *metrics.Metrics) *backends {
	t.Helper()
	b := &backends{t: t, ctx: ctx, metrics: m}
	b.pclock = pinteresttest.NewClock(t0)
	b.ps = pinteresttest.NewServer(append([]pinteresttest.Option{pinteresttest.WithClock(b.pclock.Now)}, o.pinterestServer...)...)
	t.Cleanup(b.ps.Close)

	b.eclock = actors.NewManualClock(t0)
	var store persistence.Store = persistencetest.NewMemStore(b.eclock.Now)
	if o.faults {
		b.faults = persistencetest.NewFaultStore(store)
		store = b.faults
	}
	if o.store != nil {
		o.store(store)
	}
	ecfg := actors.DefaultConfig()
	ecfg.Clock = b.eclock
	ecfg.Recover = false
	ecfg.Observer = b.metrics.Engine()
	if o.engine != nil {
		o.engine(&ecfg)
	}
	ecfg.OnJob = o.onJob
	var err error
	if b.engine, err = actors.New(ecfg, store, log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.engine.Close(context.Background()) })
	b.metrics.WatchEngine(b.engine)

	if b.links, err = badgerlinks.Open("", badgerlinks.Options{InMemory: true}, log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.links.Close() })

	hc := o.pinterestHTTP
	if o.pinterestInProcess {
		hc = b.ps.InProcess()
	}
	pcfg := pinterest.Config{
		ClientID:     b.ps.ClientID(),
		ClientSecret: b.ps.ClientSecret(),
		RedirectURL:  "http://127.0.0.1:8080/oauth/callback",
		APIBase:      b.ps.APIBase(),
		AuthURL:      b.ps.AuthURL(),
		Now:          b.pclock.Now,
		Logger:       log,
		HTTPClient:   b.countedPinterestHTTP(hc),
	}
	if o.pinterest != nil {
		o.pinterest(&pcfg)
	}
	if b.pc, err = pinterest.New(pcfg); err != nil {
		t.Fatal(err)
	}

	return b
}

// fastForward is Bot.sleepUntil for tests: it moves the engine's clock
// and the Pinterest stand-in's to at, at once, instead of waiting.
func (b *backends) fastForward(_ context.Context, at time.Time) error {
	if at.UnixMilli() > b.eclock.Now() {
		b.eclock.Set(at)
	}
	if at.After(b.pclock.Now()) {
		b.pclock.Set(at)
	}
	return nil
}

// failLookups makes every listing of pins fail, so that a search for a
// pin of unknown outcome gives up (its outcome stays unknown), and moves
// the engine clock through the searches at once.
func (w *world) failLookups() {
	f := pinteresttest.ListingFailed(http.StatusServiceUnavailable)
	f.Times = -1
	w.ps.Inject(f)
	w.bot.sleepUntil = w.fastForward
}

// countedPinterestHTTP returns hc (a default client if nil) with its
// transport counted in the world's metrics, as the program does.
func (b *backends) countedPinterestHTTP(hc *http.Client) *http.Client {
	out := &http.Client{}
	if hc != nil {
		*out = *hc
	}
	out.Transport = b.metrics.Transport(metrics.Pinterest, out.Transport, pinterest.RetryWait)
	return out
}

func (w *world) doneChan(id snowflake.ID) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.done[id]
	if !ok {
		ch = make(chan struct{})
		w.done[id] = ch
	}
	return ch
}

func (w *world) markDone(id snowflake.ID) { close(w.doneChan(id)) }

// waitDone waits until the bot finished with the interaction.
func (w *world) waitDone(in *discordtest.Interaction) {
	w.t.Helper()
	select {
	case <-w.doneChan(in.ID):
	case <-w.ctx.Done():
		w.t.Fatalf("interaction %d not finished: %v; responses %+v", in.ID, w.ctx.Err(), in.Responses())
	}
}

// addUser adds a member to the world's guild.
func (w *world) addUser(name string) snowflake.ID {
	w.t.Helper()
	m, err := w.dc.AddMember(discordtest.Member{GuildID: w.guild.ID, Username: name})
	if err != nil {
		w.t.Fatal(err)
	}
	return m.UserID
}

// addImages adds a message with n image attachments to channel.
func (w *world) addImages(channel snowflake.ID, n int, text string) discordtest.Message {
	w.t.Helper()
	atts := make([]discordtest.Attachment, n)
	for i := range atts {
		atts[i] = discordtest.Attachment{Filename: fmt.Sprintf("img%d.png", i), ContentType: "image/png", Width: 640, Height: 480}
	}
	m, err := w.dc.AddMessage(discordtest.Message{ChannelID: channel, Content: text, Attachments: atts})
	if err != nil {
		w.t.Fatal(err)
	}
	return m
}

// link makes a Pinterest account on the stand-in (the first call for an
// id), links it to the user with a default board, and returns its
// credentials.
func (w *backends) link(user snowflake.ID, accountID, username string) pinteresttest.Credentials {
	w.t.Helper()
	board := pinteresttest.Board{ID: "b" + accountID, Name: "Board of " + username}
	cred := w.ps.AddAccount(accountID, username, board)
	if err := w.links.Link(w.ctx, user.String(), links.Account{ID: accountID, Username: username, DefaultBoard: board.ID, DefaultBoardName: board.Name}, cred.Token()); err != nil {
		w.t.Fatal(err)
	}
	return cred
}

// fill records n pins for the account at the engine's current time.
func (w *backends) fill(account string, n int) {
	w.t.Helper()
	for n > 0 {
		k := min(n, actors.MaxBatch)
		g, err := w.engine.Reserve(w.ctx, account, k)
		if err != nil || g.Granted != k {
			w.t.Fatalf("fill: reserve %d: granted %d, %v", k, g.Granted, err)
		}
		for _, r := range g.Reservations() {
			if _, err := w.engine.Commit(w.ctx, r, w.engine.Now()); err != nil {
				w.t.Fatal(err)
			}
		}
		n -= k
	}
}

// used returns the account's count.
func (w *backends) used(account string) int {
	w.t.Helper()
	st, err := w.engine.Status(w.ctx, account)
	if err != nil {
		w.t.Fatal(err)
	}
	if st.Pending != 0 {
		w.t.Errorf("account %s has %d unresolved reservations", account, st.Pending)
	}
	return st.Used
}

// interact starts an interaction without waiting for it.
func (w *world) interact(inv discordtest.Invocation) *discordtest.Interaction {
	w.t.Helper()
	if inv.ChannelID == 0 {
		inv.ChannelID = w.channel.ID
	}
	in, err := w.dc.Interact(inv)
	if err != nil {
		w.t.Fatal(err)
	}
	return in
}

// run runs an interaction to its end and returns the text the user reads:
// the edited response and its followups. It checks the interaction was
// deferred ephemerally first, at once, and that everything the bot sent
// had empty allowed_mentions.
func (w *world) run(inv discordtest.Invocation) (string, *discordtest.Interaction) {
	w.t.Helper()
	in := w.interact(inv)
	w.waitDone(in)
	return w.text(in), in
}

// text checks an interaction's responses and returns what the user reads.
func (w *world) text(in *discordtest.Interaction) string {
	w.t.Helper()
	rs := in.Responses()
	if len(rs) == 0 {
		w.t.Fatalf("interaction %d: no response", in.ID)
	}
	first := rs[0]
	if first.Kind != discordtest.KindCallback || !first.OK() {
		w.t.Fatalf("interaction %d: first response %+v, want an accepted callback", in.ID, first)
	}
	if in.Type == discord.InteractionTypeAutocomplete {
		return ""
	}
	if first.Type != discord.InteractionResponseTypeDeferredCreateMessage || first.Data == nil || !first.Data.Flags.Has(discord.MessageFlagEphemeral) {
		w.t.Fatalf("interaction %d: first response type %d flags %v, want an ephemeral deferral", in.ID, first.Type, first.Data)
	}
	checkNoMentions(w.t, first)
	var parts []string
	for i, r := range rs[1:] {
		if !r.OK() {
			w.t.Fatalf("interaction %d: response %d (%s) refused: %d %s", in.ID, i+1, r.Kind, r.Code, r.Error)
		}
		checkNoMentions(w.t, r)
		if r.Data != nil && r.Data.HasContent {
			parts = append(parts, r.Data.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// checkNoMentions checks a response carried allowed_mentions that allow
// nothing.
func checkNoMentions(t testing.TB, r discordtest.Response) {
	t.Helper()
	type mentions struct {
		Parse []string `json:"parse"`
		Roles []string `json:"roles"`
		Users []string `json:"users"`
	}
	var body struct {
		AllowedMentions *mentions `json:"allowed_mentions"`
		// A callback carries its message in data.
		Data *struct {
			AllowedMentions *mentions `json:"allowed_mentions"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("response body %s: %v", r.Body, err)
	}
	am := body.AllowedMentions
	if r.Kind == discordtest.KindCallback && body.Data != nil {
		am = body.Data.AllowedMentions
	}
	if am == nil || am.Parse == nil || len(am.Parse)+len(am.Roles)+len(am.Users) != 0 {
		t.Fatalf("%s sent allowed_mentions %+v, want all empty: %s", r.Kind, am, r.Body)
	}
}

// pin runs /pin.
func (w *world) pin(user snowflake.ID, messages string, board ...string) (string, *discordtest.Interaction) {
	w.t.Helper()
	return w.run(pinInvocation(user, messages, board...))
}

// pinInvocation is /pin messages:messages [board:board[0]] run by user.
func pinInvocation(user snowflake.ID, messages string, board ...string) discordtest.Invocation {
	opts := []discordtest.CommandOption{{Name: optMessages, Value: messages}}
	if len(board) > 0 {
		opts = append(opts, discordtest.CommandOption{Name: optBoard, Value: board[0]})
	}
	return discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdPin, Options: opts}}
}

// settings runs /settings.
func (w *world) settings(user snowflake.ID) (string, *discordtest.Interaction) {
	w.t.Helper()
	return w.run(discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdSettings}})
}

// ids joins message IDs with spaces.
func ids(ms ...discordtest.Message) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.ID.String()
	}
	return strings.Join(s, " ")
}

// pump is a bare gateway client: it identifies as one shard and hands
// every INTERACTION_CREATE to Bot.HandleInteraction, as
// discordio.Gateway does, without disgo's gateway code (whose close races
// with its heartbeat under -race).
type pump struct {
	ws   *websocket.Conn
	done chan struct{}
	once sync.Once
}

// startPump connects shard of count to the stand-in's gateway, asking
// for no intents: interactions alone. Like a disgo shard, it decodes the
// events it receives one at a time.
func startPump(t testing.TB, dc *discordtest.Server, b *Bot, shard, count int) *pump {
	t.Helper()
	return startGatewayPump(t, dc, b, shard, count, 0)
}

// startGatewayPump connects shard of count with intents and hands the
// events to b as discordio.Gateway does: each interaction to
// Bot.HandleInteraction on a goroutine of its own, each reaction and
// guild message event to Bot.HandleReaction and Bot.HandleMessage on the
// reading goroutine.
func startGatewayPump(t testing.TB, dc *discordtest.Server, b *Bot, shard, count int, intents gateway.Intents) *pump {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(dc.GatewayURL()+"?v=10&encoding=json", nil)
	if err != nil {
		t.Fatalf("dial gateway: %v", err)
	}
	read := func() gateway.Message {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("gateway read: %v", err)
		}
		var m gateway.Message
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("gateway payload %s: %v", data, err)
		}
		return m
	}
	if m := read(); m.Op != gateway.OpcodeHello {
		t.Fatalf("first payload op %d, want HELLO", m.Op)
	}
	identify := map[string]any{"op": gateway.OpcodeIdentify, "d": map[string]any{
		"token":      dc.Token(),
		"properties": map[string]string{"os": "linux", "browser": "pump", "device": "pump"},
		"shard":      []int{shard, count},
		"intents":    int64(intents),
	}}
	if err := ws.WriteJSON(identify); err != nil {
		t.Fatal(err)
	}
	if m := read(); m.T != gateway.EventTypeReady {
		t.Fatalf("got %s, want READY", m.T)
	}
	_ = ws.SetReadDeadline(time.Time{})
	p := &pump{ws: ws, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var m gateway.Message
			if err := json.Unmarshal(data, &m); err != nil || m.Op != gateway.OpcodeDispatch {
				continue
			}
			ev, ok := m.D.(gateway.EventData)
			if !ok {
				continue
			}
			if i := discordio.Interaction(ev); i != nil {
				go b.HandleInteraction(i)
			}
			if r, ok := discordio.ReactionOf(ev); ok {
				b.HandleReaction(r)
			}
			if msg, ok := discordio.MessageOf(ev); ok && msg.GuildID != 0 {
				b.HandleMessage(msg)
			}
		}
	}()
	return p
}

func (p *pump) close() {
	p.once.Do(func() {
		_ = p.ws.Close()
		<-p.done
	})
}
