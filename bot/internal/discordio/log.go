package discordio

import (
	"context"
	"log/slog"
	"regexp"

	"github.com/rs/zerolog"
)

// Secrets that show up inside URLs: the token of interaction and webhook
// routes (/interactions/{id}/{token}, /webhooks/{id}/{token}), and the
// OAuth state and code parameters (a /link reply carries Pinterest's
// authorization URL, and disgo logs request bodies at debug level).
var (
	interactionTokenPath = regexp.MustCompile(`(/(?:interactions|webhooks)/[0-9]+/)[^/?"\s]+`)
	oauthParam           = regexp.MustCompile(`((?:^|[?&;]|\\u0026)(?:state|code)=)[^&\s"\\<>]+`)
	// Gateway payloads, which disgo logs whole at debug level: IDENTIFY
	// carries the bot token and INTERACTION_CREATE the interaction token,
	// both as a JSON "token" field (quoted once more when the payload is
	// itself inside a JSON string).
	tokenField = regexp.MustCompile(`(\\?"token\\?"\s*:\s*\\?")[^"\\]+`)
	// An Authorization header value: "Bot <token>" or "Bearer <token>".
	authHeader = regexp.MustCompile(`((?:Bot|Bearer) )[A-Za-z0-9._~+/=-]{8,}`)
)

// redact removes interaction tokens and OAuth states and codes from s,
// such as an error text that quotes a request URL.
func redact(s string) string {
	s = interactionTokenPath.ReplaceAllString(s, "${1}<redacted>")
	s = tokenField.ReplaceAllString(s, "${1}<redacted>")
	s = authHeader.ReplaceAllString(s, "${1}<redacted>")
	return oauthParam.ReplaceAllString(s, "${1}<redacted>")
}

// ErrText is err's text without interaction tokens, OAuth states and
// codes, or bot tokens, for logs.
func ErrText(err error) string {
	if err == nil {
		return ""
	}
	return redact(err.Error())
}

// NewSlogLogger bridges disgo's slog output to log, tagged
// component=disgo, with interaction tokens cut out of every string: disgo
// logs request URLs, and an interaction's URL carries its token.
func NewSlogLogger(log zerolog.Logger) *slog.Logger {
	inner := zerolog.NewSlogHandler(log.With().Str("component", "disgo").Logger())
	return slog.New(redactHandler{inner: inner})
}

// redactHandler is a slog.Handler that passes records on with interaction
// tokens removed from their message and string attributes.
type redactHandler struct{ inner slog.Handler }

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = redactAttr(a)
	}
	return redactHandler{inner: h.inner.WithAttrs(clean)}
}

func (h redactHandler) WithGroup(name string) slog.Handler {
	return redactHandler{inner: h.inner.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		clean := make([]any, len(group))
		for i, g := range group {
			clean[i] = redactAttr(g)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, ErrText(err))
		}
		return slog.String(a.Key, redact(v.String()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
