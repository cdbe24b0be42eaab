package badgerutil

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"
)

func TestBadgerLogger(t *testing.T) {
	var buf bytes.Buffer
	l := logger{log: zerolog.New(&buf).Level(zerolog.TraceLevel).With().Str("component", "badger").Logger()}
	l.Errorf("e %d\n", 1)
	l.Warningf("w %s", "x")
	l.Infof("i\n")
	l.Debugf("d")
	want := []struct{ level, message string }{
		{"error", "e 1"}, {"warn", "w x"}, {"debug", "i"}, {"trace", "d"},
	}
	dec := json.NewDecoder(&buf)
	for i, w := range want {
		var line struct{ Level, Message, Component string }
		if err := dec.Decode(&line); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if line.Level != w.level || line.Message != w.message || line.Component != "badger" {
			t.Errorf("line %d = %+v, want level %s message %q component badger", i, line, w.level, w.message)
		}
	}

	// Below the logger's level nothing is formatted or written.
	buf.Reset()
	quiet := logger{log: zerolog.New(&buf).Level(zerolog.InfoLevel)}
	quiet.Infof("chatter %v", panicStringer{})
	quiet.Debugf("chatter %v", panicStringer{})
	if buf.Len() != 0 {
		t.Errorf("info chatter written at info level: %s", buf.String())
	}
}

// panicStringer fails the test if it is ever formatted.
type panicStringer struct{}

func (panicStringer) String() string { panic("formatted a disabled log message") }
