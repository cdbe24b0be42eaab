// Package discordio is how the bot's disgo client talks to Discord: the
// HTTP client and rate limiter of its REST requests (RESTClientOpts), the
// bridge of disgo's slog output to zerolog with secrets cut out
// (NewSlogLogger, ErrText), and the JSON decoder disgo uses
// (InstallDecoder). Package bot builds its client with them; nothing here
// knows about commands.
package discordio
