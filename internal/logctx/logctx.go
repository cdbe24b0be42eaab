// Package logctx carries the IDs of one piece of work (a Discord
// interaction, a queued pin, an HTTP request) through a context.Context,
// so that every component that logs on its behalf tags its lines with
// them, each with its own logger and component name.
//
// # Usage
//
//	ctx = logctx.With(ctx, logctx.InteractionID, id.String())
//	...
//	logctx.Logger(ctx, c.log).Warn().Msg("pinterest request failed")
package logctx

import (
	"context"

	"github.com/rs/zerolog"
)

// Keys of the IDs, as they appear in log lines.
const (
	// InteractionID is the Discord interaction a line works for, or, on
	// a queued pin's lines, the /pin that queued it.
	InteractionID = "interaction_id"
	// JobID is the engine's ID of a queued pin.
	JobID = "job"
	// RequestID is the ID of an HTTP request to pinbot's listener, also
	// sent back in its X-Request-ID header.
	RequestID = "request_id"
)

type ctxKey struct{}

// field is one key and value a context tags log lines with.
type field struct{ key, value string }

// With returns a copy of ctx whose log lines carry key=value too; a value
// ctx already has for key is replaced. An empty value leaves ctx as it is.
func With(ctx context.Context, key, value string) context.Context {
	if value == "" {
		return ctx
	}
	prev := fields(ctx)
	fs := make([]field, 0, len(prev)+1)
	for _, f := range prev {
		if f.key != key {
			fs = append(fs, f)
		}
	}
	return context.WithValue(ctx, ctxKey{}, append(fs, field{key, value}))
}

// Value returns the value ctx carries for key, or "".
func Value(ctx context.Context, key string) string {
	for _, f := range fields(ctx) {
		if f.key == key {
			return f.value
		}
	}
	return ""
}

// Inherit returns dst carrying the IDs of src too: for work done on a
// context that outlives the one it is done for, such as a reply sent after
// its command's deadline.
func Inherit(dst, src context.Context) context.Context {
	for _, f := range fields(src) {
		dst = With(dst, f.key, f.value)
	}
	return dst
}

// Logger returns l tagged with the IDs ctx carries (a copy of l when
// there are none).
func Logger(ctx context.Context, l zerolog.Logger) *zerolog.Logger {
	fs := fields(ctx)
	if len(fs) == 0 {
		return &l
	}
	c := l.With()
	for _, f := range fs {
		c = c.Str(f.key, f.value)
	}
	out := c.Logger()
	return &out
}

func fields(ctx context.Context) []field {
	if ctx == nil {
		return nil
	}
	fs, _ := ctx.Value(ctxKey{}).([]field)
	return fs
}
