package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/internal/app"
	"github.com/pinbot/pinbot/internal/edge"
	"github.com/pinbot/pinbot/internal/gctune"
	"github.com/pinbot/pinbot/internal/limit/gcra"
)

// discordTokenEnv names the variable that carries the Discord bot token;
// when set (or --discord-token is given) pinbot runs the bot, otherwise
// the local sandbox.
const discordTokenEnv = "DISCORD_TOKEN"

// option describes a setting that a flag and an environment variable both
// set; the flag wins.
type option struct {
	flag string // flag name, without dashes
	env  string // environment variable
	arg  string // placeholder of the value in the help
	def  string // default value
	// defHelp describes the default in the help when def is "".
	defHelp string
	help    string
	// secret marks a value that must never be printed or logged.
	secret bool
}

// The options. Each command takes some of them (see commandOptions).
var (
	dataDirOption = option{
		flag: "data-dir", env: "PINBOT_DATA_DIR", arg: "DIR", def: "./data",
		help: "data directory: the stores, and the sandbox's key and log",
	}
	logLevelOption = option{
		flag: "log-level", env: "PINBOT_LOG_LEVEL", arg: "LEVEL", def: "info",
		help: "least level logged: " + strings.Join(logLevels, ", "),
	}
	discordTokenOption = option{
		flag: "discord-token", env: discordTokenEnv, arg: "TOKEN", defHelp: "none: run the sandbox",
		help: "Discord bot token; when set, pinbot runs the bot", secret: true,
	}
	clientIDOption = option{
		flag: "pinterest-client-id", env: "PINTEREST_CLIENT_ID", arg: "ID", defHelp: "none",
		help: "Pinterest app id (the bot requires it)",
	}
	clientSecretOption = option{
		flag: "pinterest-client-secret", env: "PINTEREST_CLIENT_SECRET", arg: "SECRET", defHelp: "none",
		help: "Pinterest app secret (the bot requires it)", secret: true,
	}
	httpAddrOption = option{
		flag: "http-addr", env: "PINBOT_HTTP_ADDR", arg: "HOST:PORT", def: "127.0.0.1:8080",
		help: "where the bot serves the OAuth callback, /healthz, /readyz and /metrics",
	}
	publicURLOption = option{
		flag: "public-url", env: "PINBOT_PUBLIC_URL", arg: "URL", defHelp: "none",
		help: "public address of that listener; the OAuth redirect is URL/oauth/callback (the bot requires it)",
	}
	keyFileOption = option{
		flag: "encryption-key-file", env: "PINBOT_ENCRYPTION_KEY_FILE", arg: "FILE", defHelp: "none",
		help: "key of the token store: 16, 24 or 32 bytes, mode 0600 (the bot requires it)",
	}
	adminTokenFileOption = option{
		flag: "admin-token-file", env: "PINBOT_ADMIN_TOKEN_FILE", arg: "FILE", defHelp: "none: no dashboard",
		help: "file holding the token of the operator dashboard, served at /admin on --http-addr (one line of at least 16 characters)",
	}
	discordAPIOption = option{
		flag: "discord-api-url", env: "PINBOT_DISCORD_API_URL", arg: "URL", defHelp: "https://discord.com/api/v10",
		help: "Discord REST API base",
	}
	discordGatewayOption = option{
		flag: "discord-gateway-url", env: "PINBOT_DISCORD_GATEWAY_URL", arg: "URL", defHelp: "the one Discord recommends",
		help: "Discord gateway address (ws or wss)",
	}
	pinterestAPIOption = option{
		flag: "pinterest-api-url", env: "PINBOT_PINTEREST_API_URL", arg: "URL", defHelp: "https://api.pinterest.com/v5",
		help: "Pinterest API base, such as https://api-sandbox.pinterest.com/v5",
	}
	pinterestOAuthOption = option{
		flag: "pinterest-oauth-url", env: "PINBOT_PINTEREST_OAUTH_URL", arg: "URL", defHelp: "https://www.pinterest.com/oauth/",
		help: "Pinterest authorization page",
	}
	discordClientSecretOption = option{
		flag: "discord-client-secret", env: "PINBOT_DISCORD_CLIENT_SECRET", arg: "SECRET", defHelp: "none: the confirmation page alone",
		help: "Discord application's OAuth2 client secret; when set, the browser must sign in with Discord as the user who ran /link " +
			"before it may confirm a link (register URL/oauth/discord, URL the public URL, as a redirect of the application)",
		secret: true,
	}
	discordOAuthOption = option{
		flag: "discord-oauth-url", env: "PINBOT_DISCORD_OAUTH_URL", arg: "URL", defHelp: "https://discord.com/oauth2/authorize",
		help: "Discord's OAuth2 authorization page, for the sign-in with Discord",
	}
	shardsOption = option{
		flag: "shards", env: "PINBOT_SHARDS", arg: "N", def: "0",
		help: "gateway shards; 0 takes Discord's recommendation",
	}
	continuousRefreshOption = option{
		flag: "pinterest-continuous-refresh", env: "PINBOT_PINTEREST_CONTINUOUS_REFRESH", arg: "BOOL", def: "false",
		help: "ask Pinterest for continuously rotating refresh tokens (true for apps created before 25 September 2025, whose refresh tokens otherwise expire after a year)",
	}
	pinLimitOption = option{
		flag: "pin-limit", env: "PINBOT_PIN_LIMIT", arg: "N", def: strconv.Itoa(actors.DefaultLimit),
		help: fmt.Sprintf("pins pinbot sends each Pinterest account in any window, %d to %d", minPinLimit, maxPinLimit),
	}
	pinWindowOption = option{
		flag: "pin-window", env: "PINBOT_PIN_WINDOW", arg: "DURATION", def: bot.WindowShort(actors.DefaultWindow),
		help: fmt.Sprintf("length of the rolling window, %v to %v, such as 12h or 90m", minPinWindow, actors.MaxWindow),
	}
	httpRateOption = option{
		flag: "http-rate", env: "PINBOT_HTTP_RATE", arg: "RATE", def: "20/m",
		help: `requests each client address may make to the HTTP listener: N/PERIOD with an optional ",burst=B" (such as 20/m, 5/s,burst=20), or off`,
	}
	operatorRateOption = option{
		flag: "operator-rate", env: "PINBOT_OPERATOR_RATE", arg: "RATE", def: "120/m",
		help: `requests each client address may make to /healthz, /readyz, /metrics and /admin, counted apart from the other pages: N/PERIOD with an optional ",burst=B", or off`,
	}
	trustedProxiesOption = option{
		flag: "trusted-proxies", env: "PINBOT_TRUSTED_PROXIES", arg: "CIDRS", defHelp: "none",
		help: "comma-separated addresses or CIDR prefixes of the reverse proxies whose X-Forwarded-For the HTTP listener believes",
	}
	memoryLimitOption = option{
		flag: "memory-limit", env: "PINBOT_MEMORY_LIMIT", arg: "BYTES",
		defHelp: "3/4 of the memory available: the cgroup's limit, else the RAM; GOMEMLIMIT, when set, wins",
		help:    "soft memory limit of the Go runtime, such as 2GiB, or off; pinbot also runs with GOGC=400 unless GOGC is set (docs/design.md, \"Memory and the collector\")",
	}
	parkAfterOption = option{
		flag: "park-after", env: "PINBOT_PARK_AFTER", arg: "DURATION", def: "1m",
		help: fmt.Sprintf("how long an account goes without a request before it parks: its state, once stored, moves to memory the Go collector does not walk, and its next request takes it back without reading the store, %v to %v, or off (docs/design.md, \"Memory and the collector\")", minParkAfter, maxParkAfter),
	}
	reconcileEveryOption = option{
		flag: "reconcile-every", env: "PINBOT_RECONCILE_EVERY", arg: "DURATION", def: "15m",
		help: fmt.Sprintf("interval between the rounds that compare the active accounts' counts with Pinterest's listing of their pins, %v to %v, or off", minReconcileEvery, maxReconcileEvery),
	}
	countAllPinsOption = option{
		flag: "count-all-pins", env: "PINBOT_COUNT_ALL_PINS", arg: "BOOL", def: "false",
		help: "count every pin an account made in the window against its limit, those made outside pinbot (Pinterest's app, other tools) included, as each reconciliation round finds them",
	}
	rememberPinsOption = option{
		flag: "remember-pins", env: "PINBOT_REMEMBER_PINS", arg: "DURATION", def: "2160h",
		help: fmt.Sprintf("how long pinbot remembers the pictures it pinned to each board, so that one asked for again is not pinned twice (/pin again:true overrides), %v to %v, or off", minRememberPins, maxRememberPins),
	}
	reactionsOption = option{
		flag: "reactions", env: "PINBOT_REACTIONS", arg: "BOOL", def: "on",
		help: "pin reactions: a linked user who reacts to a message with --pin-emoji pins its pictures (the gateway then asks for the GUILD_MESSAGE_REACTIONS intent); off, false or 0 turns them off",
	}
	autopinOption = option{
		flag: "autopin", env: "PINBOT_AUTOPIN", arg: "BOOL", def: "on",
		help: "auto-pin channels: the pictures posted in a channel set with /autopin are queued for its board (the gateway then asks for the GUILD_MESSAGES intent, not a privileged one); off, false or 0 turns them off",
	}
	pinEmojiOption = option{
		flag: "pin-emoji", env: "PINBOT_PIN_EMOJI", arg: "EMOJI", def: bot.DefaultPinEmoji,
		help: "the emoji of pin reactions: a unicode emoji, or a custom emoji of the server as name:id (or <:name:id>)",
	}
	etcdEndpointsOption = option{
		flag: "etcd-endpoints", env: "PINBOT_ETCD_ENDPOINTS", arg: "URLS", defHelp: "none: one process, its state in the data directory",
		help: "comma-separated client URLs of an etcd cluster (v3.4 or later): run as one member of a pinbot cluster whose state lives in etcd; needs --cluster-addr and --cluster-key-file",
	}
	clusterAddrOption = option{
		flag: "cluster-addr", env: "PINBOT_CLUSTER_ADDR", arg: "HOST:PORT", defHelp: "none",
		help: "in a cluster, where this member listens for its peers, as they reach it (a private network); also the member's name",
	}
	clusterKeyFileOption = option{
		flag: "cluster-key-file", env: "PINBOT_CLUSTER_KEY_FILE", arg: "FILE", defHelp: "none",
		help: "in a cluster, the peers' shared secret: at least 32 bytes, mode 0600, the same file on every member",
	}
	etcdCAFileOption = option{
		flag: "etcd-ca-file", env: "PINBOT_ETCD_CA_FILE", arg: "FILE", defHelp: "the system's roots",
		help: "PEM bundle of the authorities that sign etcd's server certificates; needs https:// etcd endpoints",
	}
	etcdCertFileOption = option{
		flag: "etcd-cert-file", env: "PINBOT_ETCD_CERT_FILE", arg: "FILE", defHelp: "none",
		help: "PEM client certificate pinbot shows etcd (etcd's --client-cert-auth); needs --etcd-key-file and https:// etcd endpoints",
	}
	etcdKeyFileOption = option{
		flag: "etcd-key-file", env: "PINBOT_ETCD_KEY_FILE", arg: "FILE", defHelp: "none",
		help: "PEM private key of --etcd-cert-file",
	}
	etcdUsernameOption = option{
		flag: "etcd-username", env: "PINBOT_ETCD_USERNAME", arg: "NAME", defHelp: "none",
		help: "etcd user pinbot signs in as, where etcd's authentication is enabled; needs --etcd-password-file",
	}
	etcdPasswordFileOption = option{
		flag: "etcd-password-file", env: "PINBOT_ETCD_PASSWORD_FILE", arg: "FILE", defHelp: "none",
		help: "file holding the password of --etcd-username (one line, mode 0600)",
	}
	leaseOption = option{
		flag: "lease", env: "PINBOT_LEASE", arg: "DURATION", def: "5m",
		help: fmt.Sprintf("how long a reserved slot may stay neither used nor given back before it counts as a pin made at its end, %v to %v; every request for its pin ends --slot-margin before, and a pin needs %v of it to be sent", minLease, maxLease, minSendTime),
	}
	slotMarginOption = option{
		flag: "slot-margin", env: "PINBOT_SLOT_MARGIN", arg: "DURATION", def: "1m",
		help: fmt.Sprintf("how long Pinterest may take, at most, to act on a request whose answer never came (and the clocks to disagree), %v to %v and at most --lease less %v", minSlotMargin, maxSlotMargin, minSendTime),
	}
	listingLagOption = option{
		flag: "listing-lag", env: "PINBOT_LISTING_LAG", arg: "DURATION", def: "1m",
		help: fmt.Sprintf("how long after Pinterest made a pin its listing shows it, at most: a pin of unknown outcome is proven never made by a listing begun that long after Pinterest must have acted, %v to %v", minListingLag, maxListingLag),
	}
	userRateOption = option{
		flag: "user-rate", env: "PINBOT_USER_RATE", arg: "RATE", def: "60/10m",
		help: `units of work each Discord user may ask for (a /pin costs one per image, other commands one): N/PERIOD with an optional ",burst=B", or off`,
	}
)

// Bounds of --reconcile-every and --remember-pins.
const (
	minReconcileEvery = time.Minute
	maxReconcileEvery = 24 * time.Hour
	minRememberPins   = time.Hour
	maxRememberPins   = 3 * 365 * 24 * time.Hour
)

// Bounds of --lease, --slot-margin and --listing-lag: the timing of
// unknown outcomes (docs/design.md, "Pinterest's ledger"). Short values
// suit a test against stand-ins only: Pinterest's act delay and listing
// lag are not known to be that short.
const (
	minLease      = 45 * time.Second
	maxLease      = time.Hour
	minSlotMargin = 500 * time.Millisecond
	maxSlotMargin = 30 * time.Minute
	minListingLag = 500 * time.Millisecond
	maxListingLag = time.Hour
	// minSendTime is the least time a slot's lease leaves to send its
	// pin, the margin aside: a request to Pinterest is sent only while
	// its whole timeout is left, and a pin may wait for a worker and
	// fetch its message first.
	minSendTime = pinterest.DefaultRequestTimeout + 10*time.Second
)

// Bounds of --park-after: an account idle for the engine's IdleTimeout
// (10 minutes) is written out and leaves memory instead.
const (
	minParkAfter = time.Second
	maxParkAfter = 5 * time.Minute
)

// Bounds of --pin-limit and --pin-window.
const (
	minPinLimit  = 1
	maxPinLimit  = 1 << 16
	minPinWindow = time.Second
)

// logLevels are the accepted values of --log-level.
var logLevels = []string{"trace", "debug", "info", "warn", "error", "disabled"}

// maxShards bounds --shards.
const maxShards = 1 << 16

// setting is the value of one option and where it came from.
type setting struct {
	opt   *option
	value string
	// from is the flag ("--data-dir") or environment variable that set
	// value, or "" when value is the default.
	from string
}

// name returns how error messages refer to the setting: by the flag or
// variable that set it, by its flag when it holds the default.
func (s *setting) name() string {
	if s.from == "" {
		return "--" + s.opt.flag
	}
	return s.from
}

// both names the setting by its variable and its flag, for messages
// about a setting that is missing.
func (s *setting) both() string {
	return s.opt.env + " (or --" + s.opt.flag + ")"
}

// shown is the value as messages may show it: secrets are not shown.
func (s *setting) shown() string {
	if s.opt.secret {
		return "(hidden)"
	}
	return strconv.Quote(s.value)
}

// settings are the values of every option, taken from the command line,
// else the environment, else the defaults.
type settings struct {
	dataDir, logLevel                     setting
	discordToken, clientID, clientSecret  setting
	httpAddr, publicURL, keyFile          setting
	discordAPI, discordGateway            setting
	pinterestAPI, pinterestOAuth          setting
	discordClientSecret, discordOAuth     setting
	shards                                setting
	continuousRefresh                     setting
	pinLimit, pinWindow                   setting
	httpRate, trustedProxies, userRate    setting
	operatorRate                          setting
	adminTokenFile                        setting
	memoryLimit, parkAfter                setting
	reconcileEvery, countAllPins          setting
	rememberPins                          setting
	reactions, pinEmoji                   setting
	autopin                               setting
	lease, slotMargin, listingLag         setting
	etcdEndpoints, clusterAddr            setting
	clusterKeyFile                        setting
	etcdCAFile, etcdCertFile, etcdKeyFile setting
	etcdUsername, etcdPasswordFile        setting
}

// newSettings returns the defaults overridden by the environment.
func newSettings(getenv func(string) string) settings {
	st := settings{
		dataDir:             setting{opt: &dataDirOption},
		logLevel:            setting{opt: &logLevelOption},
		discordToken:        setting{opt: &discordTokenOption},
		clientID:            setting{opt: &clientIDOption},
		clientSecret:        setting{opt: &clientSecretOption},
		httpAddr:            setting{opt: &httpAddrOption},
		publicURL:           setting{opt: &publicURLOption},
		keyFile:             setting{opt: &keyFileOption},
		discordAPI:          setting{opt: &discordAPIOption},
		discordGateway:      setting{opt: &discordGatewayOption},
		pinterestAPI:        setting{opt: &pinterestAPIOption},
		pinterestOAuth:      setting{opt: &pinterestOAuthOption},
		shards:              setting{opt: &shardsOption},
		continuousRefresh:   setting{opt: &continuousRefreshOption},
		pinLimit:            setting{opt: &pinLimitOption},
		pinWindow:           setting{opt: &pinWindowOption},
		httpRate:            setting{opt: &httpRateOption},
		operatorRate:        setting{opt: &operatorRateOption},
		trustedProxies:      setting{opt: &trustedProxiesOption},
		userRate:            setting{opt: &userRateOption},
		adminTokenFile:      setting{opt: &adminTokenFileOption},
		discordClientSecret: setting{opt: &discordClientSecretOption},
		discordOAuth:        setting{opt: &discordOAuthOption},
		memoryLimit:         setting{opt: &memoryLimitOption},
		parkAfter:           setting{opt: &parkAfterOption},
		reconcileEvery:      setting{opt: &reconcileEveryOption},
		countAllPins:        setting{opt: &countAllPinsOption},
		rememberPins:        setting{opt: &rememberPinsOption},
		reactions:           setting{opt: &reactionsOption},
		autopin:             setting{opt: &autopinOption},
		pinEmoji:            setting{opt: &pinEmojiOption},
		lease:               setting{opt: &leaseOption},
		slotMargin:          setting{opt: &slotMarginOption},
		listingLag:          setting{opt: &listingLagOption},
		etcdEndpoints:       setting{opt: &etcdEndpointsOption},
		clusterAddr:         setting{opt: &clusterAddrOption},
		clusterKeyFile:      setting{opt: &clusterKeyFileOption},
		etcdCAFile:          setting{opt: &etcdCAFileOption},
		etcdCertFile:        setting{opt: &etcdCertFileOption},
		etcdKeyFile:         setting{opt: &etcdKeyFileOption},
		etcdUsername:        setting{opt: &etcdUsernameOption},
		etcdPasswordFile:    setting{opt: &etcdPasswordFileOption},
	}
	for _, s := range st.all() {
		s.value = s.opt.def
		if v := getenv(s.opt.env); v != "" {
			s.value, s.from = v, s.opt.env
		}
	}
	return st
}

func (st *settings) all() []*setting {
	return []*setting{
		&st.dataDir, &st.logLevel,
		&st.discordToken, &st.clientID, &st.clientSecret,
		&st.httpAddr, &st.publicURL, &st.keyFile,
		&st.discordAPI, &st.discordGateway, &st.pinterestAPI, &st.pinterestOAuth,
		&st.discordClientSecret, &st.discordOAuth,
		&st.shards, &st.continuousRefresh,
		&st.pinLimit, &st.pinWindow,
		&st.httpRate, &st.operatorRate, &st.trustedProxies, &st.userRate,
		&st.adminTokenFile, &st.memoryLimit, &st.parkAfter,
		&st.reconcileEvery, &st.countAllPins, &st.rememberPins,
		&st.reactions, &st.pinEmoji, &st.autopin,
		&st.lease, &st.slotMargin, &st.listingLag,
		&st.etcdEndpoints, &st.clusterAddr, &st.clusterKeyFile,
		&st.etcdCAFile, &st.etcdCertFile, &st.etcdKeyFile,
		&st.etcdUsername, &st.etcdPasswordFile,
	}
}

// commandOptions lists the options each command takes: "" is pinbot
// itself (the bot or the sandbox), which takes them all.
func commandOptions(cmd string) []*option {
	switch cmd {
	case "accounts", "jobs":
		return []*option{&dataDirOption, &logLevelOption, &keyFileOption}
	case "demo":
		return []*option{&dataDirOption, &logLevelOption, &pinLimitOption, &pinWindowOption}
	case "backup":
		return []*option{&dataDirOption, &logLevelOption, &keyFileOption}
	case "restore":
		return []*option{&dataDirOption, &logLevelOption, &keyFileOption, &pinLimitOption, &pinWindowOption}
	case "reconcile":
		return []*option{&dataDirOption, &logLevelOption, &pinLimitOption, &pinWindowOption}
	case "invite":
		return []*option{&discordTokenOption}
	case "cluster":
		return append([]*option{&logLevelOption}, etcdOptions...)
	}
	return allOptions
}

// allOptions are the options in the order the help lists them.
var allOptions = []*option{
	&dataDirOption, &logLevelOption,
	&discordTokenOption, &clientIDOption, &clientSecretOption,
	&httpAddrOption, &publicURLOption, &keyFileOption,
	&discordAPIOption, &discordGatewayOption, &pinterestAPIOption, &pinterestOAuthOption,
	&discordClientSecretOption, &discordOAuthOption,
	&shardsOption, &continuousRefreshOption,
	&pinLimitOption, &pinWindowOption,
	&httpRateOption, &operatorRateOption, &trustedProxiesOption, &userRateOption,
	&adminTokenFileOption, &memoryLimitOption, &parkAfterOption,
	&reconcileEveryOption, &countAllPinsOption, &rememberPinsOption,
	&reactionsOption, &pinEmojiOption, &autopinOption,
	&leaseOption, &slotMarginOption, &listingLagOption,
	&etcdEndpointsOption, &clusterAddrOption, &clusterKeyFileOption,
	&etcdCAFileOption, &etcdCertFileOption, &etcdKeyFileOption,
	&etcdUsernameOption, &etcdPasswordFileOption,
}

// etcdOptions are the options that say how to reach etcd: every command
// that does takes them all.
var etcdOptions = []*option{
	&etcdEndpointsOption,
	&etcdCAFileOption, &etcdCertFileOption, &etcdKeyFileOption,
	&etcdUsernameOption, &etcdPasswordFileOption,
}

// bind defines in fs the flags of the options cmd takes, with the current
// values as defaults, so that a flag set earlier (before the command name)
// or by the environment holds unless given again.
func (st *settings) bind(fs *flag.FlagSet, cmd string) {
	opts := commandOptions(cmd)
	for _, s := range st.all() {
		if slices.Contains(opts, s.opt) {
			fs.StringVar(&s.value, s.opt.flag, s.value, s.opt.help)
		}
	}
}

// noteFlags records which settings the parsed fs set.
func (st *settings) noteFlags(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		for _, s := range st.all() {
			if f.Name == s.opt.flag {
				s.from = "--" + f.Name
			}
		}
	})
}

// validate checks the settings every command uses and returns the log
// level. Its errors name the flag or environment variable at fault; when
// there are several, it returns them all in a *configErrors.
func (st *settings) validate() (zerolog.Level, error) {
	var errs configErrors
	level := st.checkCommon(&errs)
	return level, errs.err()
}

// validateEngine is validate for the commands that run the rate-limit
// engine under the configured limit and window: it returns its
// configuration too, and every problem with either.
func (st *settings) validateEngine() (zerolog.Level, actors.Config, error) {
	var errs configErrors
	level := st.checkCommon(&errs)
	engine := st.checkEngine(&errs)
	return level, engine, errs.err()
}

// checkCommon adds the problems with the settings every command uses to
// errs, and returns the log level.
func (st *settings) checkCommon(errs *configErrors) zerolog.Level {
	if strings.TrimSpace(st.dataDir.value) == "" {
		errs.add(fmt.Errorf("invalid %s %q: want a directory", st.dataDir.name(), st.dataDir.value))
	}
	if !slices.Contains(logLevels, st.logLevel.value) {
		errs.add(fmt.Errorf("invalid %s %q: want one of %s",
			st.logLevel.name(), st.logLevel.value, strings.Join(logLevels, ", ")))
		return zerolog.InfoLevel
	}
	level, err := zerolog.ParseLevel(st.logLevel.value)
	if err != nil {
		errs.add(fmt.Errorf("invalid %s %q: %w", st.logLevel.name(), st.logLevel.value, err))
	}
	return level
}

// checkEngine adds the problems with the rate-limit engine's settings to
// errs, and returns the engine's configuration.
func (st *settings) checkEngine(errs *configErrors) actors.Config {
	cfg := actors.DefaultConfig()
	n, err := strconv.Atoi(st.pinLimit.value)
	if err != nil || n < minPinLimit || n > maxPinLimit {
		errs.add(fmt.Errorf("invalid %s %s: want a whole number of pins from %d to %d",
			st.pinLimit.name(), st.pinLimit.shown(), minPinLimit, maxPinLimit))
	} else {
		cfg.Limit = n
	}
	w, err := time.ParseDuration(st.pinWindow.value)
	switch {
	case err != nil || w < minPinWindow || w > actors.MaxWindow:
		errs.add(fmt.Errorf("invalid %s %s: want a duration from %v to %v, such as 12h or 90m",
			st.pinWindow.name(), st.pinWindow.shown(), minPinWindow, actors.MaxWindow))
	case w%time.Millisecond != 0:
		errs.add(fmt.Errorf("invalid %s %s: want a whole number of milliseconds", st.pinWindow.name(), st.pinWindow.shown()))
	default:
		cfg.Window = w
	}
	return cfg
}

// checkParkAfter reads --park-after into cfg, for the bot and the sandbox
// (the other commands that run the engine keep its default).
func (st *settings) checkParkAfter(errs *configErrors, cfg *actors.Config) {
	cfg.ParkAfter = 0
	if v := strings.TrimSpace(st.parkAfter.value); v != "off" {
		d, err := time.ParseDuration(v)
		if err != nil || d < minParkAfter || d > maxParkAfter || d%time.Millisecond != 0 {
			errs.add(fmt.Errorf("invalid %s %s: want a duration from %v to %v in whole milliseconds, such as 1m, or off",
				st.parkAfter.name(), st.parkAfter.shown(), minParkAfter, maxParkAfter))
		} else {
			cfg.ParkAfter = d
		}
	}
}

// checkMemory adds a problem with the memory limit to errs.
func (st *settings) checkMemory(errs *configErrors) {
	if v := st.memoryLimit.value; v != "" {
		if _, err := gctune.ParseLimit(v); err != nil {
			errs.add(fmt.Errorf("invalid %s %q: %w", st.memoryLimit.name(), v, err))
		}
	}
}

// tuneCollector sets the Go collector's defaults for a long-running
// pinbot (internal/gctune): GOGC and the soft memory limit, each unless
// the environment sets it.
func (st *settings) tuneCollector(getenv func(string) string) (gctune.Settings, error) {
	env := gctune.ProcessEnv()
	env.Getenv = getenv
	return gctune.Apply(env, st.memoryLimit.name(), st.memoryLimit.value)
}

// botMode reports whether the settings ask for the Discord bot.
func (st *settings) botMode() bool { return st.discordToken.value != "" }

// botSettings are the validated settings of the bot.
type botSettings struct {
	token, clientID, clientSecret string
	httpAddr                      string
	publicURL, redirectURL        string
	keyFile                       string
	discordAPI, discordGateway    string
	pinterestAPI, pinterestOAuth  string
	// discordClientSecret, when set, requires the sign-in with Discord
	// before a link is confirmed; discordOAuth is Discord's authorization
	// page and discordRedirectURL where it sends the browser back.
	discordClientSecret, discordOAuth string
	discordRedirectURL                string
	shards                            int
	continuousRefresh                 bool
	// httpRate limits each client of the HTTP listener, trusting the
	// X-Forwarded-For of trustedProxies, and operatorRate the same
	// client's requests to the health checks, metrics and dashboard;
	// userRate each Discord user. A zero rate is "off".
	httpRate       gcra.Rate
	operatorRate   gcra.Rate
	trustedProxies []netip.Prefix
	userRate       gcra.Rate
	// reconcileEvery is the interval between reconciliation rounds, 0
	// for none (off); countAllPins counts the pins made elsewhere.
	reconcileEvery time.Duration
	countAllPins   bool
	// rememberPins is how long the pictures pinned are remembered; -1
	// for not at all (off).
	rememberPins time.Duration
	// noReactions turns pin reactions off; pinEmoji is their emoji, as
	// bot.Config.PinEmoji takes it.
	noReactions bool
	pinEmoji    string
	// noAutopin turns auto-pin channels off.
	noAutopin bool
	// lease is the engine's reservation lease (actors.Config.Lease),
	// slotMargin and listingLag bot.Config's: how long Pinterest may take
	// to act on a request, and to list a pin it made.
	lease, slotMargin, listingLag time.Duration
	// etcdEndpoints, when set, make the bot one member of a cluster,
	// reached by its peers at clusterAddr, sharing clusterKey.
	etcdEndpoints []string
	clusterAddr   string
	clusterKey    []byte
	// etcdCredentials are how the member and etcd check each other.
	etcdCredentials app.EtcdCredentials
	// engine configures the rate-limit engine (see checkEngine).
	engine actors.Config
	// adminToken is the operator dashboard's token (see readAdminToken);
	// nil: no dashboard.
	adminToken []byte
	// tokenName and httpAddrName name the token and HTTP address settings
	// in the errors met once the bot starts: the flag or variable that
	// set them (see setting.name).
	tokenName, httpAddrName string
}

// secrets are the settings the log must never show (see newLogger): the
// bot token, both apps' client secrets and the admin token.
func (cfg botSettings) secrets() []string {
	return []string{cfg.token, cfg.clientSecret, cfg.discordClientSecret, string(cfg.adminToken), string(cfg.clusterKey), cfg.etcdCredentials.Password}
}

// callbackPath is where the bot's listener serves the OAuth callback
// (bot/web.CallbackPath), discordCallbackPath the sign-in with Discord's
// (bot/web.DiscordCallbackPath).
const (
	callbackPath        = "/oauth/callback"
	discordCallbackPath = "/oauth/discord"
)

// validateBot checks the settings the bot needs, beyond those of
// validate. Its errors name the flag or environment variable at fault,
// and never show a secret; when there are several, it returns them all in
// a *configErrors.
func (st *settings) validateBot() (botSettings, error) {
	var errs configErrors
	b := st.checkBot(&errs)
	return b, errs.err()
}

// checkBot adds the problems with the settings the bot needs, beyond
// those of checkCommon, to errs, and returns the bot's settings.
func (st *settings) checkBot(errs *configErrors) botSettings {
	b := botSettings{
		token:               st.discordToken.value,
		clientID:            st.clientID.value,
		clientSecret:        st.clientSecret.value,
		httpAddr:            st.httpAddr.value,
		keyFile:             st.keyFile.value,
		discordAPI:          st.discordAPI.value,
		discordGateway:      st.discordGateway.value,
		pinterestAPI:        st.pinterestAPI.value,
		pinterestOAuth:      st.pinterestOAuth.value,
		discordClientSecret: st.discordClientSecret.value,
		discordOAuth:        st.discordOAuth.value,
		tokenName:           st.discordToken.name(),
		httpAddrName:        st.httpAddr.name(),
	}
	if strings.TrimSpace(b.token) != b.token || strings.ContainsAny(b.token, " \t\r\n") {
		errs.add(fmt.Errorf("invalid %s: it contains spaces or line breaks", st.discordToken.name()))
	} else if bot.CheckToken(b.token) != nil {
		errs.add(fmt.Errorf("invalid %s: it is not a Discord bot token (its first part must be the base64 application ID)",
			st.discordToken.name()))
	}
	for _, s := range []*setting{&st.clientID, &st.clientSecret, &st.publicURL} {
		if strings.TrimSpace(s.value) == "" {
			errs.add(fmt.Errorf("%s is set, so %s is required", st.discordToken.name(), s.both()))
		}
	}
	if b.discordClientSecret != "" && (strings.TrimSpace(b.discordClientSecret) != b.discordClientSecret ||
		strings.ContainsAny(b.discordClientSecret, " \t\r\n")) {
		errs.add(fmt.Errorf("invalid %s: it contains spaces or line breaks", st.discordClientSecret.name()))
	}
	if strings.TrimSpace(b.keyFile) == "" {
		errs.add(fmt.Errorf("%s is set, so %s is required: the OAuth tokens are stored encrypted with it. "+
			"Create a key with: head -c 32 /dev/urandom > pinbot.key && chmod 600 pinbot.key",
			st.discordToken.name(), st.keyFile.both()))
	}
	errs.add(checkAddr(&st.httpAddr))
	if strings.TrimSpace(st.publicURL.value) != "" {
		u, err := checkURL(&st.publicURL, "http", "https")
		errs.add(err)
		// The redirect URL is the public URL followed by callbackPath, so
		// the public URL may not hold a query or fragment, not even an
		// empty one ("https://host/?" would put the path in the query).
		switch {
		case err != nil:
		case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(st.publicURL.value, "#"):
			errs.add(fmt.Errorf("invalid %s %s: want an address without a query or fragment", st.publicURL.name(), st.publicURL.shown()))
		default:
			b.publicURL = strings.TrimRight(u.String(), "/")
			b.redirectURL = b.publicURL + callbackPath
			if b.discordClientSecret != "" {
				b.discordRedirectURL = b.publicURL + discordCallbackPath
			}
		}
	}
	for _, c := range []struct {
		s       *setting
		schemes []string
	}{
		{&st.discordAPI, []string{"http", "https"}},
		{&st.discordGateway, []string{"ws", "wss"}},
		{&st.pinterestAPI, []string{"http", "https"}},
		{&st.pinterestOAuth, []string{"http", "https"}},
		{&st.discordOAuth, []string{"http", "https"}},
	} {
		if c.s.value == "" {
			continue
		}
		_, err := checkURL(c.s, c.schemes...)
		errs.add(err)
	}
	n, err := strconv.Atoi(st.shards.value)
	if err != nil || n < 0 || n > maxShards {
		errs.add(fmt.Errorf("invalid %s %s: want a whole number from 0 (Discord's recommendation) to %d",
			st.shards.name(), st.shards.shown(), maxShards))
	}
	b.shards = n
	cr, err := strconv.ParseBool(st.continuousRefresh.value)
	if err != nil {
		errs.add(fmt.Errorf("invalid %s %s: want true or false", st.continuousRefresh.name(), st.continuousRefresh.shown()))
	}
	b.continuousRefresh = cr
	b.httpRate = checkRate(errs, &st.httpRate)
	b.operatorRate = checkRate(errs, &st.operatorRate)
	b.userRate = checkRate(errs, &st.userRate)
	proxies, err := edge.ParseProxies(st.trustedProxies.value)
	if err != nil {
		errs.add(fmt.Errorf("invalid %s %s: %s", st.trustedProxies.name(), st.trustedProxies.shown(), strings.TrimPrefix(err.Error(), "edge: ")))
	}
	b.trustedProxies = proxies
	if v := strings.TrimSpace(st.reconcileEvery.value); v != "off" {
		d, err := time.ParseDuration(v)
		if err != nil || d < minReconcileEvery || d > maxReconcileEvery {
			errs.add(fmt.Errorf("invalid %s %s: want a duration from %v to %v, such as 15m, or off",
				st.reconcileEvery.name(), st.reconcileEvery.shown(), minReconcileEvery, maxReconcileEvery))
		}
		b.reconcileEvery = d
	}
	ca, err := strconv.ParseBool(st.countAllPins.value)
	if err != nil {
		errs.add(fmt.Errorf("invalid %s %s: want true or false", st.countAllPins.name(), st.countAllPins.shown()))
	}
	b.countAllPins = ca
	b.rememberPins = -1
	if v := strings.TrimSpace(st.rememberPins.value); v != "off" {
		d, err := time.ParseDuration(v)
		if err != nil || d < minRememberPins || d > maxRememberPins {
			errs.add(fmt.Errorf("invalid %s %s: want a duration from %v to %v, such as 2160h (90 days), or off",
				st.rememberPins.name(), st.rememberPins.shown(), minRememberPins, maxRememberPins))
		}
		b.rememberPins = d
	}
	st.checkReactions(errs, &b)
	st.checkTiming(errs, &b)
	st.checkCluster(errs, &b)
	return b
}

// checkReactions reads PINBOT_REACTIONS, PINBOT_PIN_EMOJI and
// PINBOT_AUTOPIN into b.
func (st *settings) checkReactions(errs *configErrors, b *botSettings) {
	switch strings.ToLower(strings.TrimSpace(st.reactions.value)) {
	case "on", "true", "1":
	case "off", "false", "0":
		b.noReactions = true
	default:
		errs.add(fmt.Errorf("invalid %s %s: want on or off (true or false, 1 or 0)", st.reactions.name(), st.reactions.shown()))
	}
	e, err := bot.ParsePinEmoji(st.pinEmoji.value)
	if err != nil {
		errs.add(fmt.Errorf("invalid %s: %v", st.pinEmoji.name(), err))
	}
	b.pinEmoji = e
	switch strings.ToLower(strings.TrimSpace(st.autopin.value)) {
	case "on", "true", "1":
	case "off", "false", "0":
		b.noAutopin = true
	default:
		errs.add(fmt.Errorf("invalid %s %s: want on or off (true or false, 1 or 0)", st.autopin.name(), st.autopin.shown()))
	}
}

// checkTiming reads the lease, slot margin and listing lag into b. The
// margin must leave minSendTime of the lease to send a pin in.
func (st *settings) checkTiming(errs *configErrors, b *botSettings) {
	b.lease = checkDuration(errs, &st.lease, minLease, maxLease, "5m")
	b.slotMargin = checkDuration(errs, &st.slotMargin, minSlotMargin, maxSlotMargin, "1m")
	b.listingLag = checkDuration(errs, &st.listingLag, minListingLag, maxListingLag, "1m")
	if b.lease > 0 && b.slotMargin > 0 && b.lease-b.slotMargin < minSendTime {
		errs.add(fmt.Errorf("invalid %s %s: want at most %s (%v) less %v, so that a pin has time to be sent in its slot",
			st.slotMargin.name(), st.slotMargin.shown(), st.lease.name(), b.lease, minSendTime))
	}
}

// checkDuration reads a duration setting from lo to hi, whole
// milliseconds; a problem goes to errs, and 0 is returned.
func checkDuration(errs *configErrors, s *setting, lo, hi time.Duration, example string) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s.value))
	switch {
	case err != nil || d < lo || d > hi:
		errs.add(fmt.Errorf("invalid %s %s: want a duration from %v to %v, such as %s", s.name(), s.shown(), lo, hi, example))
	case d%time.Millisecond != 0:
		errs.add(fmt.Errorf("invalid %s %s: want a whole number of milliseconds", s.name(), s.shown()))
	default:
		return d
	}
	return 0
}

// minClusterKey is the shortest peers' secret accepted.
const minClusterKey = 32

// checkCluster reads the cluster settings into b: none, or all three
// with etcd's credentials.
func (st *settings) checkCluster(errs *configErrors, b *botSettings) {
	if strings.TrimSpace(st.etcdEndpoints.value) == "" {
		for _, s := range []*setting{&st.clusterAddr, &st.clusterKeyFile,
			&st.etcdCAFile, &st.etcdCertFile, &st.etcdKeyFile, &st.etcdUsername, &st.etcdPasswordFile} {
			if s.value != "" {
				errs.add(fmt.Errorf("%s is set but %s is not: a cluster member needs etcd", s.name(), st.etcdEndpoints.both()))
			}
		}
		return
	}
	for _, e := range strings.Split(st.etcdEndpoints.value, ",") {
		e = strings.TrimSpace(e)
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs.add(fmt.Errorf("invalid %s: %q is not an http:// or https:// URL of an etcd member", st.etcdEndpoints.name(), e))
			continue
		}
		b.etcdEndpoints = append(b.etcdEndpoints, e)
	}
	if len(b.etcdEndpoints) > 0 {
		b.etcdCredentials = st.checkEtcd(errs, b.etcdEndpoints)
	}
	host, port, err := net.SplitHostPort(st.clusterAddr.value)
	switch {
	case st.clusterAddr.value == "":
		errs.add(fmt.Errorf("%s is set, so %s is required: where the peers reach this member", st.etcdEndpoints.name(), st.clusterAddr.both()))
	case err != nil || host == "" || port == "" || port == "0" || strings.Contains(st.clusterAddr.value, "/"):
		errs.add(fmt.Errorf("invalid %s %s: want HOST:PORT that the other members can dial, such as 10.0.0.5:7946", st.clusterAddr.name(), st.clusterAddr.shown()))
	default:
		b.clusterAddr = st.clusterAddr.value
	}
	if st.clusterKeyFile.value == "" {
		errs.add(fmt.Errorf("%s is set, so %s is required: the peers' shared secret", st.etcdEndpoints.name(), st.clusterKeyFile.both()))
		return
	}
	key, err := readSecretFile(&st.clusterKeyFile, minClusterKey)
	if err != nil {
		errs.add(err)
		return
	}
	b.clusterKey = key
}

// checkEtcd reads the credentials pinbot reaches etcd at endpoints with,
// and checks them as app.EtcdConfig does; its errors name the settings.
func (st *settings) checkEtcd(errs *configErrors, endpoints []string) app.EtcdCredentials {
	cred := app.EtcdCredentials{
		CAFile:   st.etcdCAFile.value,
		CertFile: st.etcdCertFile.value,
		KeyFile:  st.etcdKeyFile.value,
		Username: st.etcdUsername.value,
	}
	n := len(*errs)
	for _, pair := range [][2]*setting{
		{&st.etcdCertFile, &st.etcdKeyFile}, {&st.etcdKeyFile, &st.etcdCertFile},
		{&st.etcdUsername, &st.etcdPasswordFile}, {&st.etcdPasswordFile, &st.etcdUsername},
	} {
		if pair[0].value != "" && pair[1].value == "" {
			errs.add(fmt.Errorf("%s is set, so %s is required: they go together", pair[0].name(), pair[1].both()))
		}
	}
	for _, s := range []*setting{&st.etcdCAFile, &st.etcdCertFile, &st.etcdKeyFile} {
		if s.value == "" {
			continue
		}
		for _, e := range endpoints {
			if !strings.HasPrefix(e, "https://") {
				errs.add(fmt.Errorf("%s is set, so %s must be https:// URLs, not %q: etcd speaks TLS on https:// endpoints alone",
					s.name(), st.etcdEndpoints.name(), e))
				break
			}
		}
	}
	if st.etcdPasswordFile.value != "" {
		pw, err := readPasswordFile(&st.etcdPasswordFile)
		errs.add(err)
		cred.Password = pw
	}
	if len(*errs) > n {
		return app.EtcdCredentials{}
	}
	if _, err := app.EtcdConfig(endpoints, cred, 0); err != nil {
		var ce *app.EtcdConfigError
		if !errors.As(err, &ce) {
			errs.add(err)
			return app.EtcdCredentials{}
		}
		s := map[app.EtcdField]*setting{
			app.EtcdEndpoints: &st.etcdEndpoints,
			app.EtcdCAFile:    &st.etcdCAFile,
			app.EtcdCertFile:  &st.etcdCertFile,
			app.EtcdKeyFile:   &st.etcdKeyFile,
			app.EtcdUsername:  &st.etcdUsername,
			app.EtcdPassword:  &st.etcdPasswordFile,
		}[ce.Field]
		errs.add(fmt.Errorf("invalid %s: %v", s.name(), ce.Err))
		return app.EtcdCredentials{}
	}
	return cred
}

// etcdConfig is the etcd client's configuration of the commands that
// reach etcd without joining the cluster, from the same settings and
// checks as a member's. Its errors name the settings.
func (st *settings) etcdConfig() (clientv3.Config, error) {
	var errs configErrors
	endpoints := splitEndpoints(st.etcdEndpoints.value)
	cred := st.checkEtcd(&errs, endpoints)
	if err := errs.err(); err != nil {
		return clientv3.Config{}, err
	}
	return app.EtcdConfig(endpoints, cred, 0)
}

// readPasswordFile reads a password from the file the setting names:
// one line, its line break dropped, readable by its owner alone.
func readPasswordFile(s *setting) (string, error) {
	fi, err := os.Stat(s.value)
	switch {
	case err != nil:
		return "", fmt.Errorf("invalid %s: %w", s.name(), err)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("invalid %s: %s is not a regular file", s.name(), s.value)
	}
	if err := ownerOnly(s, "password file", s.value, fi.Mode()); err != nil {
		return "", err
	}
	b, err := os.ReadFile(s.value)
	if err != nil {
		return "", fmt.Errorf("invalid %s: %w", s.name(), err)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" || strings.ContainsAny(pw, "\r\n") {
		return "", fmt.Errorf("invalid %s: %s must hold the password on one line", s.name(), s.value)
	}
	return pw, nil
}

// checkRate reads a rate setting: "off" is the zero Rate, anything else
// a gcra.ParseRate rate. Problems go to errs.
func checkRate(errs *configErrors, s *setting) gcra.Rate {
	if strings.TrimSpace(s.value) == "off" {
		return gcra.Rate{}
	}
	r, err := gcra.ParseRate(s.value)
	if err != nil {
		errs.add(fmt.Errorf("invalid %s %s: %v; or off", s.name(), s.shown(), errors.Unwrap(err)))
		return gcra.Rate{}
	}
	return r
}

// configErrors are every problem found in the configuration, so that one
// run reports them all.
type configErrors []error

// add adds err, unless it is nil; the errors of a configErrors are added
// one by one.
func (e *configErrors) add(err error) {
	var many *configErrors
	switch {
	case err == nil:
	case errors.As(err, &many) && many != e:
		*e = append(*e, *many...)
	default:
		*e = append(*e, err)
	}
}

// err returns nil when there is no problem, the problem itself when there
// is one, and e when there are several.
func (e configErrors) err() error {
	switch len(e) {
	case 0:
		return nil
	case 1:
		return e[0]
	}
	return &e
}

// Error lists the problems, one a line.
func (e *configErrors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems with the configuration:", len(*e))
	for _, err := range *e {
		b.WriteString("\n  - ")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (e *configErrors) Unwrap() []error { return *e }

// checkURL parses the setting as an absolute URL with one of schemes.
func checkURL(s *setting, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(s.value)
	if err != nil || u.Host == "" || !slices.Contains(schemes, u.Scheme) || u.User != nil {
		return nil, fmt.Errorf("invalid %s %s: want an absolute %s URL", s.name(), s.shown(), strings.Join(schemes, " or "))
	}
	return u, nil
}

// checkAddr checks that the setting is a HOST:PORT to listen on.
func checkAddr(s *setting) error {
	_, port, err := net.SplitHostPort(s.value)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n < 0 || n > 65535) {
			err = fmt.Errorf("port %d out of range", n)
		}
	}
	if err != nil {
		return fmt.Errorf("invalid %s %s: want HOST:PORT, such as 127.0.0.1:8080", s.name(), s.shown())
	}
	return nil
}

// ignoredInSandbox lists the settings given (by flag or environment) that
// only the bot uses.
func (st *settings) ignoredInSandbox() []string {
	var out []string
	for _, s := range []*setting{
		&st.clientID, &st.clientSecret, &st.publicURL, &st.keyFile,
		&st.discordAPI, &st.discordGateway, &st.pinterestAPI, &st.pinterestOAuth, &st.shards, &st.continuousRefresh,
		&st.httpRate, &st.operatorRate, &st.trustedProxies, &st.userRate,
		&st.adminTokenFile,
		&st.discordClientSecret, &st.discordOAuth,
		&st.reconcileEvery, &st.countAllPins, &st.rememberPins,
		&st.reactions, &st.pinEmoji, &st.autopin,
		&st.lease, &st.slotMargin, &st.listingLag,
	} {
		if s.from != "" {
			out = append(out, s.from)
		}
	}
	return out
}
