package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/internal/sandbox"
	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/badgerstore"
	"github.com/rs/zerolog"
)

// countLines returns the replies to pins number from to to (inclusive).
func countLines(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("12-hour pin count: %d/100", i))
	}
	return out
}

// demoStep is one run of the demo: the commands it reads and the replies
// it must print after its banner, line by line. A wanted line ending in
// "*" matches every line starting with what comes before the "*".
type demoStep struct {
	stdin string
	want  []string
}

// runDemoSteps runs the demo once per step on the data directory dir.
func runDemoSteps(t *testing.T, dir string, steps []demoStep) {
	t.Helper()
	for i, s := range steps {
		r := pinbot(t, s.stdin, nil, "demo", "--data-dir", dir)
		r.wantCode(t, fmt.Sprintf("step %d", i), exitOK)
		checkReplies(t, fmt.Sprintf("step %d", i), r.stdout, s.want)
	}
}

// checkReplies compares the demo's output, without its banner, to want.
func checkReplies(t *testing.T, what, stdout string, want []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "pinbot engine demo: store in ") || lines[1] != `Type "help" for the commands.` {
		t.Fatalf("%s: output does not start with the banner:\n%s", what, stdout)
	}
	got := lines[2:]
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		ok := g == w
		if p, found := strings.CutSuffix(w, "*"); found {
			ok = i < len(got) && strings.HasPrefix(g, p)
		}
		if !ok {
			t.Fatalf("%s: reply line %d = %q want %q\nwhole output:\n%s", what, i, g, w, stdout)
		}
	}
}

func TestDemoPinStatusAndPersistence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runDemoSteps(t, dir, []demoStep{
		{
			stdin: "pin alice 3\nstatus alice\n",
			want:  append(countLines(1, 3), "alice — 12-hour pins: 3/100"),
		},
		{ // A new process on the same directory sees the same counts.
			stdin: "status alice bob\npin alice 1\nstatus alice\nquit\nstatus alice\n",
			want: []string{
				"alice — 12-hour pins: 3/100",
				"bob — 12-hour pins: 0/100",
				"12-hour pin count: 4/100",
				"alice — 12-hour pins: 4/100",
				// nothing after quit
			},
		},
		{
			stdin: "STATUS alice\nhelp\n",
			want: append([]string{"alice — 12-hour pins: 4/100", "Commands:"},
				strings.Split(strings.TrimSuffix(demoCommandsHelp, "\n"), "\n")...),
		},
	})
}

func TestDemoPinLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fill := strings.Repeat("pin bob 10\n", 9) + "pin bob 5\n"
	var want []string
	want = append(want, countLines(1, 95)...)
	want = append(want, "bob — 12-hour pins: 95/100")
	want = append(want, countLines(96, 100)...)
	want = append(want,
		"Pin limit reached (100/12h). Skipped remaining pins.",
		"Next slot frees in *",
		"bob is at its limit (100/12h): no pins made. Next slot frees in *",
		"bob — 12-hour pins: 100/100; next slot frees in *",
		"carol — 12-hour pins: 0/100",
	)
	runDemoSteps(t, dir, []demoStep{
		{
			stdin: fill + "status bob\npin bob 10\npin bob 1\nstatus bob carol\n",
			want:  want,
		},
		{ // Still full after a restart.
			stdin: "pin bob 3\n",
			want:  []string{"bob is at its limit (100/12h): no pins made. Next slot frees in *"},
		},
	})
}

func TestDemoBadInputKeepsGoing(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", persistence.MaxAccountLen+1)
	many := strings.Repeat(" x", maxStatusAccounts+1)
	tests := []struct{ line, want string }{
		{"frobnicate", `error: unknown command "frobnicate"; type "help" for the commands`},
		{"pin", "error: usage: pin ACCOUNT N"},
		{"pin alice", "error: usage: pin ACCOUNT N"},
		{"pin alice 1 2", "error: usage: pin ACCOUNT N"},
		{"pin alice 0", `error: N must be a whole number from 1 to 10, got "0"`},
		{"pin alice 11", `error: N must be a whole number from 1 to 10, got "11"`},
		{"pin alice -3", `error: N must be a whole number from 1 to 10, got "-3"`},
		{"pin alice two", `error: N must be a whole number from 1 to 10, got "two"`},
		{"pin alice 1.5", `error: N must be a whole number from 1 to 10, got "1.5"`},
		{"pin " + long + " 1", "error: invalid account id \"aaaa*"},
		{"pin a\x00b 1", `error: invalid account id "a\x00b" (3 bytes): want 1 to 128 bytes, without NUL bytes`},
		{"status", "error: usage: status ACCOUNT [ACCOUNT...]"},
		{"status alice " + long, "error: invalid account id \"aaaa*"},
		{"status" + many, "error: status takes at most 100 accounts, got 101"},
		{"   ", ""}, // blank: no reply
	}
	var stdin strings.Builder
	var want []string
	for _, tt := range tests {
		stdin.WriteString(tt.line + "\n")
		if tt.want != "" {
			want = append(want, tt.want)
		}
	}
	stdin.WriteString("pin alice 2\nstatus alice\n")
	want = append(want, "12-hour pin count: 1/100", "12-hour pin count: 2/100", "alice — 12-hour pins: 2/100")
	runDemoSteps(t, t.TempDir(), []demoStep{{stdin: stdin.String(), want: want}})
}

// TestDemoLongLineIgnored checks that a line over sandbox.MaxLineLen is
// answered with an error line, and the commands after it still run; a
// line of exactly sandbox.MaxLineLen bytes is read as a command.
func TestDemoLongLineIgnored(t *testing.T) {
	t.Parallel()
	at := strings.Repeat("x", sandbox.MaxLineLen)
	stdin := "pin a 1\n" + at + "\n" + at + "y\n" + strings.Repeat("z", 1<<20) + "\nstatus a\n"
	runDemoSteps(t, t.TempDir(), []demoStep{{stdin: stdin, want: []string{
		"12-hour pin count: 1/100",
		`error: unknown command "xxxx*`,
		"error: the line is longer than 64 KiB and was ignored",
		"error: the line is longer than 64 KiB and was ignored",
		"a — 12-hour pins: 1/100",
	}}})
}

func TestDemoOnLockedDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := badgerstore.Open(filepath.Join(dir, engineSubdir), badgerstore.Options{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r := pinbot(t, "pin alice 1\n", nil, "demo", "--data-dir", dir)
	r.wantCode(t, "demo on a locked directory", exitFailure)
	if !strings.Contains(r.stderr, "pinbot: data directory is in use by another pinbot process") {
		t.Errorf("stderr = %q, want the in-use message", r.stderr)
	}
}

// TestDemoStopsWhenInterrupted cancels the demo's context, as SIGINT and
// SIGTERM do, while it waits for input that never ends, then checks that
// what it did was saved.
func TestDemoStopsWhenInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stdin, input := io.Pipe()
	defer input.Close()
	out := &watchWriter{want: "12-hour pin count: 2/100", seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- runDemo(ctx, demoConfig{dataDir: dir, in: stdin, out: out, log: zerolog.Nop(), engine: actors.DefaultConfig()})
	}()
	go func() {
		// Fails with io.ErrClosedPipe if the demo ended first; the
		// checks below then report it.
		_, _ = io.WriteString(input, "pin carol 2\n")
	}()
	select {
	case <-out.seen:
	case err := <-errc:
		t.Fatalf("demo ended before pinning: %v\n%s", err, out.String())
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("runDemo after cancel = %v, want nil", err)
	}
	runDemoSteps(t, dir, []demoStep{{stdin: "status carol\n", want: []string{"carol — 12-hour pins: 2/100"}}})
}

// watchWriter is a buffer, safe for simultaneous use, that closes seen once
// what was written contains want.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
