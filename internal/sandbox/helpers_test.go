package sandbox

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/logtest"
)

// testConfig returns a Config keeping everything under dir, logging to
// logs.
func testConfig(dir string, logs *logtest.Buffer) Config {
	return Config{
		EngineDir: filepath.Join(dir, "engine"),
		LinksDir:  filepath.Join(dir, "links"),
		KeyFile:   filepath.Join(dir, "sandbox.key"),
		// The operator's routes, the dashboard included, as make run has them.
		AdminTokenFile: filepath.Join(dir, "admin.token"),
		Log:            zerolog.New(logs).Level(zerolog.InfoLevel).With().Timestamp().Logger(),
	}
}

// session is a running sandbox with a console writing to a buffer.
type session struct {
	t    *testing.T
	ctx  context.Context
	sb   *Sandbox
	con  *Console
	out  *bytes.Buffer
	logs *logtest.Buffer
}

// startSession starts a sandbox on dir; it is closed when the test ends
// unless closed before.
func startSession(t *testing.T, dir string) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	logs := &logtest.Buffer{}
	sb, err := Start(ctx, testConfig(dir, logs))
	if err != nil {
		t.Fatalf("Start: %v\nlogs:\n%s", err, logs)
	}
	s := &session{t: t, ctx: ctx, sb: sb, out: &bytes.Buffer{}, logs: logs}
	s.con = sb.Console(s.out)
	t.Cleanup(func() { s.close() })
	return s
}

// close closes the sandbox, failing the test on an error.
func (s *session) close() {
	s.t.Helper()
	if err := s.sb.Close(context.Background()); err != nil {
		s.t.Errorf("Close: %v\nlogs:\n%s", err, s.logs)
	}
}

// exec runs one console line and returns what it printed.
func (s *session) exec(line string) string {
	s.t.Helper()
	start := s.out.Len()
	if quit := s.con.Exec(s.ctx, line); quit {
		s.t.Fatalf("%q quit the console", line)
	}
	if err := s.con.Err(); err != nil {
		s.t.Fatalf("%q: console output: %v", line, err)
	}
	return s.out.String()[start:]
}

// step is one console command and what its output must contain, and
// must not.
type step struct {
	line    string
	want    []string
	notWant []string
}

// run runs the steps in order.
func (s *session) run(steps []step) {
	s.t.Helper()
	for i, st := range steps {
		got := s.exec(st.line)
		for _, w := range st.want {
			if !strings.Contains(got, w) {
				s.t.Errorf("step %d: %q printed:\n%s\nwant it to contain %q", i, st.line, got, w)
			}
		}
		for _, w := range st.notWant {
			if strings.Contains(got, w) {
				s.t.Errorf("step %d: %q printed:\n%s\nwant it not to contain %q", i, st.line, got, w)
			}
		}
	}
	if s.t.Failed() {
		s.t.Logf("logs:\n%s", s.logs)
		s.t.FailNow()
	}
}

// startSessionWith starts a sandbox on dir whose engine runs under ecfg.
func startSessionWith(t *testing.T, dir string, ecfg actors.Config) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	logs := &logtest.Buffer{}
	cfg := testConfig(dir, logs)
	cfg.Engine = &ecfg
	sb, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v\nlogs:\n%s", err, logs)
	}
	s := &session{t: t, ctx: ctx, sb: sb, out: &bytes.Buffer{}, logs: logs}
	s.con = sb.Console(s.out)
	t.Cleanup(func() { s.close() })
	return s
}
