package main

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// newLogger returns the program's logger, writing to w at level and above:
// human-readable lines when w is a terminal (colored unless NO_COLOR is
// set), JSON lines otherwise. Writes are serialized, so the logger is safe
// for simultaneous use by multiple goroutines whatever w is.
func newLogger(w io.Writer, level zerolog.Level, getenv func(string) string) zerolog.Logger {
	out := w
	if isTerminal(w) {
		out = zerolog.ConsoleWriter{
			Out:        w,
			TimeFormat: time.TimeOnly,
			NoColor:    getenv("NO_COLOR") != "",
		}
	}
	return zerolog.New(zerolog.SyncWriter(out)).Level(level).With().Timestamp().Logger()
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
