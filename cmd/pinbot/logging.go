package main

import (
	"encoding/json"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// minSecretLen is the shortest secret newLogger cuts out of log lines:
// cutting shorter strings would garble the logs, and no token or app
// secret is that short.
const minSecretLen = 8

// redacted replaces secrets in log lines.
const redacted = "[REDACTED]"

// newLogger returns the program's logger, writing to w at level and above:
// human-readable lines when w is a terminal (colored unless NO_COLOR is
// set), JSON lines otherwise. Every secret given (of at least minSecretLen
// bytes) is replaced by [REDACTED] in whatever is written, whichever
// library logged it. Writes are serialized, so the logger is safe for
// simultaneous use by multiple goroutines whatever w is.
func newLogger(w io.Writer, level zerolog.Level, getenv func(string) string, secrets ...string) zerolog.Logger {
	out := redactingWriter(w, secrets)
	if isTerminal(w) {
		out = zerolog.ConsoleWriter{
			Out:        out,
			TimeFormat: time.TimeOnly,
			NoColor:    getenv("NO_COLOR") != "",
		}
	}
	return zerolog.New(zerolog.SyncWriter(out)).Level(level).With().Timestamp().Logger()
}

// redactWriter writes to w with every secret replaced.
type redactWriter struct {
	w io.Writer
	r *strings.Replacer
}

// redactingWriter returns w, wrapped to replace secrets when there are
// any: each as given and as JSON escapes it.
func redactingWriter(w io.Writer, secrets []string) io.Writer {
	var pairs []string
	for _, s := range secrets {
		if len(s) < minSecretLen {
			continue
		}
		pairs = append(pairs, s, redacted)
		if b, err := json.Marshal(s); err == nil {
			if esc := string(b[1 : len(b)-1]); esc != s {
				pairs = append(pairs, esc, redacted)
			}
		}
	}
	if len(pairs) == 0 {
		return w
	}
	return redactWriter{w: w, r: strings.NewReplacer(pairs...)}
}

// Write writes p with the secrets replaced. It reports len(p) written on
// success, as the caller's bytes were all consumed.
func (rw redactWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(rw.w, rw.r.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// isTerminal reports whether v is a file open on a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	fd := f.Fd()
	return isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)
}
