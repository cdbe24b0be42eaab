package discordtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"
)

// APIVersion is the Discord API version the stand-in speaks, on REST and on
// the gateway.
const APIVersion = 10

const (
	apiPrefix   = "/api/v10"
	gatewayPath = "/gateway"
	resumePath  = "/gateway-resume"
)

// Defaults used by NewServer.
const (
	// DefaultApplicationID is the application (and bot user) ID of a server
	// built without WithApplicationID.
	DefaultApplicationID snowflake.ID = 1_200_000_000_000_000_000

	// DefaultHeartbeatInterval is the heartbeat_interval sent in HELLO.
	// Discord sends 41.25 s; so does the stand-in unless told otherwise.
	DefaultHeartbeatInterval = 41250 * time.Millisecond

	// DefaultHeartbeatACKDelay is how long the stand-in takes to answer a
	// heartbeat: the network's latency, which Discord's answers always
	// have. An immediate answer on loopback can reach disgo before it has
	// stamped the heartbeat as sent, and disgo then takes the connection
	// for a zombie (see Traps in the package documentation).
	DefaultHeartbeatACKDelay = 50 * time.Millisecond

	// InteractionDeadline is how long after its creation an interaction
	// accepts its initial callback.
	InteractionDeadline = 3 * time.Second

	// InteractionTokenLifetime is how long an interaction token stays valid
	// for edits and followups.
	InteractionTokenLifetime = 15 * time.Minute
)

// DefaultApplicationFlags are the application flags of a server built
// without WithApplicationFlags: the bot may use the message content and
// guild members privileged intents, as an application in fewer than 100
// guilds that switched them on.
const DefaultApplicationFlags = discord.ApplicationFlagGatewayMessageContentLimited |
	discord.ApplicationFlagGatewayGuildMemberLimited

// Errors returned by the Server's test API.
var (
	// ErrClosed is returned by waits and actions on a closed Server.
	ErrClosed = errors.New("discordtest: server closed")

	// ErrNoSession is returned when no gateway session serves the shard an
	// action is aimed at.
	ErrNoSession = errors.New("discordtest: no gateway session for shard")

	// ErrNotConnected is returned when a shard's session has no live
	// connection to act on.
	ErrNotConnected = errors.New("discordtest: shard not connected")

	// ErrUnknownGuild, ErrUnknownChannel, ErrUnknownRole, ErrUnknownMember,
	// ErrUnknownMessage, ErrUnknownUser and ErrUnknownInteraction are
	// returned when the model has no such object.
	ErrUnknownGuild       = errors.New("discordtest: unknown guild")
	ErrUnknownChannel     = errors.New("discordtest: unknown channel")
	ErrUnknownRole        = errors.New("discordtest: unknown role")
	ErrUnknownMember      = errors.New("discordtest: unknown member")
	ErrUnknownMessage     = errors.New("discordtest: unknown message")
	ErrUnknownUser        = errors.New("discordtest: unknown user")
	ErrUnknownInteraction = errors.New("discordtest: unknown interaction")

	// ErrInvalid is returned for arguments the stand-in cannot model.
	ErrInvalid = errors.New("discordtest: invalid argument")
)

type config struct {
	applicationID     snowflake.ID
	botName           string
	token             string
	clock             func() time.Time
	shards            int
	maxConcurrency    int
	heartbeatInterval time.Duration
	heartbeatACKDelay time.Duration
	appFlags          discord.ApplicationFlags
	rateLimit         int
	rateLimitWindow   time.Duration
	channelLimit      int
	channelWindow     time.Duration
	globalLimit       int           // WithGlobalRateLimit
	globalWindow      time.Duration // WithGlobalRateLimit
	logger            zerolog.Logger
}

// Option configures a Server built by NewServer.
type Option func(*config)

// WithApplicationID sets the application ID, which is also the bot's user ID
// and is encoded in the bot token. Defaults to DefaultApplicationID.
func WithApplicationID(id snowflake.ID) Option {
	return func(c *config) { c.applicationID = id }
}

// WithBotName sets the bot user's username. Defaults to "pinbot".
func WithBotName(name string) Option {
	return func(c *config) { c.botName = name }
}

// WithClock sets the clock the stand-in reads for every decision that
// depends on time: snowflake timestamps, the 3 s interaction deadline, the
// 15 min token lifetime, rate limit windows and recorded times. Defaults to
// time.Now. See ManualClock.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.clock = now }
}

// WithShardCount sets the shard count GET /gateway/bot recommends.
// Defaults to 1.
func WithShardCount(n int) Option {
	return func(c *config) { c.shards = n }
}

// WithMaxConcurrency sets session_start_limit.max_concurrency in
// GET /gateway/bot. Defaults to 1.
func WithMaxConcurrency(n int) Option {
	return func(c *config) { c.maxConcurrency = n }
}

// WithHeartbeatInterval sets the heartbeat_interval sent in HELLO.
// Defaults to DefaultHeartbeatInterval.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(c *config) { c.heartbeatInterval = d }
}

// WithHeartbeatACKDelay sets how long after a heartbeat its
// HEARTBEAT_ACK is sent; 0 answers at once. A delay over a quarter of the
// heartbeat interval is cut to that quarter, so that the answer always
// comes before the next heartbeat is due. Defaults to
// DefaultHeartbeatACKDelay.
func WithHeartbeatACKDelay(d time.Duration) Option {
	return func(c *config) { c.heartbeatACKDelay = d }
}

// WithApplicationFlags sets the application's flags, which decide the
// privileged intents the bot may identify with and whether REST hands it
// message content. Defaults to DefaultApplicationFlags.
func WithApplicationFlags(flags discord.ApplicationFlags) Option {
	return func(c *config) { c.appFlags = flags }
}

// WithRateLimit sets the per-bucket limit and window advertised in the
// X-RateLimit headers. The stand-in reports them but only answers 429 when
// told to (see Server.Inject and WithChannelRateLimit). Defaults to 50
// requests per second.
func WithRateLimit(limit int, window time.Duration) Option {
	return func(c *config) {
		c.rateLimit = limit
		c.rateLimitWindow = window
	}
}

// WithLogger sets the logger the stand-in writes its debug trace to.
// Defaults to a disabled logger.
func WithLogger(logger zerolog.Logger) Option {
	return func(c *config) { c.logger = logger }
}

// Server is a Discord stand-in listening on a loopback port. It serves the
// REST API under APIURL and the gateway under GatewayURL, backed by an
// in-memory model of guilds, channels, roles, members and messages.
//
// A Server is safe for simultaneous use by multiple goroutines.
type Server struct {
	cfg       config
	baseURL   string
	srv       *http.Server
	done      chan struct{} // closed by Close
	wg        sync.WaitGroup
	botUser   userInfo
	verifyKey string

	mu      sync.Mutex // guards the fields below
	changed chan struct{}
	closed  bool
	idSeq   uint64
	model
	app     appState
	gw      gatewayState
	rest    restState
	dms     dmState
	chlog   channelLimitState
	glog    globalLimitState // WithGlobalRateLimit (ratelimit_global.go)
	oauth2  oauth2State
	inters  map[snowflake.ID]*interaction
	byToken map[string]*interaction
	dupAcks int
}

// NewServer starts a stand-in on 127.0.0.1 with a random port. Close it when
// done.
func NewServer(opts ...Option) *Server {
	cfg := config{
		applicationID:     DefaultApplicationID,
		botName:           "pinbot",
		clock:             time.Now,
		shards:            1,
		maxConcurrency:    1,
		heartbeatInterval: DefaultHeartbeatInterval,
		heartbeatACKDelay: DefaultHeartbeatACKDelay,
		appFlags:          DefaultApplicationFlags,
		rateLimit:         50,
		rateLimitWindow:   time.Second,
		logger:            zerolog.Nop(),
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.shards < 1 {
		cfg.shards = 1
	}
	if cfg.maxConcurrency < 1 {
		cfg.maxConcurrency = 1
	}
	if cfg.rateLimit < 1 {
		cfg.rateLimit = 1
	}
	if cfg.rateLimitWindow <= 0 {
		cfg.rateLimitWindow = time.Second
	}
	cfg.heartbeatACKDelay = max(0, min(cfg.heartbeatACKDelay, cfg.heartbeatInterval/4))
	cfg.logger = cfg.logger.With().Str("component", "discordtest").Logger()
	cfg.token = makeToken(cfg.applicationID)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		// Without a loopback listener nothing can work; mirror httptest,
		// which has no error return either, but fall back to IPv6 first.
		if ln, err = net.Listen("tcp6", "[::1]:0"); err != nil {
			cfg.logger.Error().Err(err).Msg("listen failed")
			ln = closedListener{}
		}
	}

	s := &Server{
		cfg:     cfg,
		baseURL: "http://" + ln.Addr().String(),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		model:   newModel(),
		inters:  map[snowflake.ID]*interaction{},
		byToken: map[string]*interaction{},
		gw:      newGatewayState(),
		rest:    newRestState(),
	}
	s.botUser = userInfo{ID: cfg.applicationID, Username: cfg.botName, Bot: true}
	s.verifyKey = randomHex(32)
	botCopy := s.botUser
	s.users[s.botUser.ID] = &botCopy
	s.srv = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
	return s
}

// URL returns the server's base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return s.baseURL }

// APIURL returns the REST base URL to hand to rest.WithURL,
// http://127.0.0.1:port/api/v10.
func (s *Server) APIURL() string { return s.baseURL + apiPrefix }

// GatewayURL returns the gateway URL, ws://127.0.0.1:port/gateway. It is also
// what GET /gateway/bot returns, so disgo finds it on its own.
func (s *Server) GatewayURL() string {
	return "ws" + strings.TrimPrefix(s.baseURL, "http") + gatewayPath
}

// ResumeGatewayURL returns the resume_gateway_url sent in READY. The same
// gateway serves it under its own path, as Discord's resume URLs name a
// host of their own.
func (s *Server) ResumeGatewayURL() string {
	return "ws" + strings.TrimPrefix(s.baseURL, "http") + resumePath
}

// Token returns the bot token the stand-in accepts. It encodes the
// application ID the way Discord's tokens do, which disgo relies on.
func (s *Server) Token() string { return s.cfg.token }

// ApplicationID returns the application ID, which is also the bot's user ID.
func (s *Server) ApplicationID() snowflake.ID { return s.cfg.applicationID }

// BotUserID returns the bot's user ID.
func (s *Server) BotUserID() snowflake.ID { return s.cfg.applicationID }

// Now returns the time on the server's clock.
func (s *Server) Now() time.Time { return s.cfg.clock() }

// Close shuts the server down: it closes every gateway connection, ends
// held or delayed REST requests, and waits for all of its goroutines to
// return. Close is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	conns := s.gw.allConns()
	s.notifyLocked()
	s.mu.Unlock()

	for _, c := range conns {
		c.kill()
	}
	_ = s.srv.Close()
	s.wg.Wait()
}

// serveHTTP routes a request to the gateway or to REST.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "discordtest: server closed", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	switch {
	case r.URL.Path == gatewayPath || r.URL.Path == resumePath:
		s.serveGateway(w, r)
	case r.URL.Path == apiPrefix || strings.HasPrefix(r.URL.Path, apiPrefix+"/"):
		s.serveREST(w, r)
	case r.URL.Path == OAuth2AuthorizePath:
		s.serveAuthorize(w, r)
	default:
		writeJSON(w, http.StatusNotFound, apiError{Message: "404: Not Found", Code: 0}, nil)
	}
}

// notifyLocked wakes every waiter. The caller holds s.mu.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor blocks until cond, evaluated with s.mu held, reports true, the
// context ends or the server closes.
func (s *Server) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// newIDLocked returns a fresh snowflake stamped with t. The low 22 bits
// (worker, process, increment) count up so IDs stay unique on a stopped
// clock. The caller holds s.mu.
func (s *Server) newIDLocked(t time.Time) snowflake.ID {
	s.idSeq++
	return snowflake.New(t) | snowflake.ID(s.idSeq&(1<<22-1))
}

// makeToken builds a bot token whose first part is the base64 application
// ID, as Discord's are.
func makeToken(appID snowflake.ID) string {
	return base64.RawStdEncoding.EncodeToString([]byte(appID.String())) + ".discordtest." + randomHex(16)
}

// randomHex returns n random bytes, hex encoded.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// randomToken returns an interaction token: long, URL safe, unguessable.
func randomToken() string {
	b := make([]byte, 96)
	_, _ = rand.Read(b)
	return "aW50ZXJhY3Rpb246" + base64.RawURLEncoding.EncodeToString(b)
}

// closedListener stands in when no loopback port can be had; every Accept
// fails, so the server is unreachable but Close still works.
type closedListener struct{}

func (closedListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (closedListener) Close() error              { return nil }
func (closedListener) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// String describes the server for logs.
func (s *Server) String() string { return fmt.Sprintf("discordtest.Server(%s)", s.baseURL) }
