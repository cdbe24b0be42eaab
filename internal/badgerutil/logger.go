package badgerutil

import (
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"
)

// NewLogger returns a badger.Logger that sends Badger's messages to log:
// errors and warnings as such, its routine progress (Info) at debug level
// and its Debug messages at trace level, formatted only when the level is
// enabled.
func NewLogger(log zerolog.Logger) badger.Logger { return logger{log: log} }

type logger struct{ log zerolog.Logger }

func (l logger) Errorf(format string, args ...any)   { emit(l.log.Error(), format, args) }
func (l logger) Warningf(format string, args ...any) { emit(l.log.Warn(), format, args) }
func (l logger) Infof(format string, args ...any)    { emit(l.log.Debug(), format, args) }
func (l logger) Debugf(format string, args ...any)   { emit(l.log.Trace(), format, args) }

func emit(e *zerolog.Event, format string, args []any) {
	if !e.Enabled() {
		return
	}
	e.Msg(strings.TrimSpace(fmt.Sprintf(format, args...)))
}
