package discordio

import (
	"context"
	"net/http"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/disgo/rest"
	"github.com/disgoorg/snowflake/v2"
	"github.com/rs/zerolog"
)

// RESTConfig configures REST.
type RESTConfig struct {
	// Token is the bot's token; AppID its application's ID.
	Token string
	AppID snowflake.ID
	// URL replaces Discord's API base URL (stand-ins); "" is Discord's.
	URL string
	// Log receives the rate limiter's and disgo's lines.
	Log zerolog.Logger
	// Wrap, in order, wraps the HTTP client's transport (metrics).
	Wrap []func(http.RoundTripper) http.RoundTripper
	// DefaultMentions is every message's allowed_mentions unless it sets
	// its own.
	DefaultMentions discord.AllowedMentions
	// Processes, when set, returns how many processes share the token
	// now: the requests Discord's global limit binds are then kept
	// within GlobalShare of it. Nil: no share is kept (one process).
	Processes func() int
}

// REST is API over disgo's REST client, with the HTTP client and rate
// limiter of RESTClientOpts.
type REST struct {
	appID  snowflake.ID
	client rest.Client
	r      rest.Rest
}

var _ API = (*REST)(nil)

// NewREST builds the REST client. It makes no request.
func NewREST(cfg RESTConfig) *REST {
	InstallDecoder()
	l := newRESTLimiter(cfg.Log)
	if cfg.Processes != nil {
		l.setShare(cfg.Processes)
	}
	opts := restClientOpts(l, cfg.Wrap...)
	opts = append(opts, rest.WithLogger(NewSlogLogger(cfg.Log)))
	if cfg.URL != "" {
		opts = append(opts, rest.WithURL(cfg.URL))
	}
	return NewRESTOver(cfg.AppID, rest.NewClient(cfg.Token, opts...), cfg.DefaultMentions)
}

// NewRESTOver is API over an existing disgo REST client c, for
// application appID.
func NewRESTOver(appID snowflake.ID, c rest.Client, mentions discord.AllowedMentions) *REST {
	return &REST{appID: appID, client: c, r: rest.New(c, rest.WithDefaultAllowedMentions(mentions))}
}

// Close closes the HTTP client's idle connections. Requests in flight
// must have ended.
func (c *REST) Close(ctx context.Context) { c.client.Close(ctx) }

func (c *REST) Respond(ctx context.Context, id snowflake.ID, token string, r discord.InteractionResponse) error {
	return Wrap(c.r.CreateInteractionResponse(id, token, r, rest.WithCtx(ctx)))
}

func (c *REST) Original(ctx context.Context, token string) (*discord.Message, error) {
	m, err := c.r.GetInteractionResponse(c.appID, token, rest.WithCtx(ctx))
	return m, Wrap(err)
}

func (c *REST) EditOriginal(ctx context.Context, token string, m discord.MessageUpdate) error {
	_, err := c.r.UpdateInteractionResponse(c.appID, token, m, rest.WithCtx(ctx))
	return Wrap(err)
}

func (c *REST) Followup(ctx context.Context, token string, m discord.MessageCreate) error {
	_, err := c.r.CreateFollowupMessage(c.appID, token, m, rest.WithCtx(ctx))
	return Wrap(err)
}

func (c *REST) Message(ctx context.Context, channelID, messageID snowflake.ID) (*discord.Message, error) {
	m, err := c.r.GetMessage(channelID, messageID, rest.WithCtx(ctx))
	return m, Wrap(err)
}

func (c *REST) Channel(ctx context.Context, channelID snowflake.ID) (discord.Channel, error) {
	ch, err := c.r.GetChannel(channelID, rest.WithCtx(ctx))
	return ch, Wrap(err)
}

func (c *REST) Guild(ctx context.Context, guildID snowflake.ID) (*discord.RestGuild, error) {
	g, err := c.r.GetGuild(guildID, false, rest.WithCtx(ctx))
	return g, Wrap(err)
}

func (c *REST) Roles(ctx context.Context, guildID snowflake.ID) ([]discord.Role, error) {
	rs, err := c.r.GetRoles(guildID, rest.WithCtx(ctx))
	return rs, Wrap(err)
}

func (c *REST) Member(ctx context.Context, guildID, userID snowflake.ID) (*discord.Member, error) {
	m, err := c.r.GetMember(guildID, userID, rest.WithCtx(ctx))
	return m, Wrap(err)
}

func (c *REST) OpenDM(ctx context.Context, userID snowflake.ID) (snowflake.ID, error) {
	ch, err := c.r.CreateDMChannel(userID, rest.WithCtx(ctx))
	if err != nil {
		return 0, Wrap(err)
	}
	return ch.ID(), nil
}

func (c *REST) Send(ctx context.Context, channelID snowflake.ID, m discord.MessageCreate) error {
	_, err := c.r.CreateMessage(channelID, m, rest.WithCtx(ctx))
	return Wrap(err)
}

func (c *REST) SetCommands(ctx context.Context, cmds []discord.ApplicationCommandCreate) (int, error) {
	got, err := c.r.SetGlobalCommands(c.appID, cmds, rest.WithCtx(ctx))
	return len(got), Wrap(err)
}

func (c *REST) GatewayBot(ctx context.Context) (GatewayInfo, error) {
	gb, err := c.r.GetGatewayBot(rest.WithCtx(ctx))
	if err != nil {
		return GatewayInfo{}, Wrap(err)
	}
	return GatewayInfo{URL: gb.URL, Shards: gb.Shards, MaxConcurrency: gb.SessionStartLimit.MaxConcurrency}, nil
}
