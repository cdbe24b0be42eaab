// Package discordio is the bot's adapter to Discord: the only package of
// the bot that imports disgo's rest, gateway and sharding packages.
//
//   - API is every REST request the bot makes (interaction responses,
//     messages, channels, guilds, DMs, commands), with Discord's refusals
//     as *Error and their classifiers (NotFound, Forbidden, DMRefused,
//     Refused). REST implements it over disgo, with the HTTP client and
//     the rate limiter of RESTClientOpts; package discordiotest has an
//     in-memory double for handler tests.
//   - Gateway is the sharded gateway connection: it hands each
//     interaction to a function on a goroutine of its own and reports the
//     shards' state.
//   - NewSlogLogger bridges disgo's slog output to zerolog with secrets
//     cut out (ErrText likewise for errors), and InstallDecoder sets the
//     JSON decoder disgo uses.
//
// Nothing here knows about commands: package bot routes interactions and
// words replies; the types it exchanges with this package are disgo's
// discord types.
package discordio
