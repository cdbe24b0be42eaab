package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pinbot/pinbot/bot"
)

// TestCommandsStateTheCaps keeps the console's help in step with the
// bot's caps on one command.
func TestCommandsStateTheCaps(t *testing.T) {
	t.Parallel()
	for _, want := range []string{
		fmt.Sprintf("up to %d message IDs", bot.MaxMessagesPerPin),
		fmt.Sprintf("one command pins at most %d images and skips the rest", bot.MaxPinsPerBatch),
	} {
		if !strings.Contains(Commands, want) {
			t.Errorf("Commands lacks %q:\n%s", want, Commands)
		}
	}
}

// readAll collects what ReadLines sends for r, and its final error.
func readAll(t *testing.T, r io.Reader) ([]Line, error) {
	t.Helper()
	done := make(chan struct{})
	defer close(done)
	lines, errc := ReadLines(r, done)
	var got []Line
	for l := range lines {
		got = append(got, l)
	}
	return got, <-errc
}

// TestReadLines checks how ReadLines splits its input: line endings, the
// last line without one, and lines over MaxLineLen, which are discarded
// whole, reported with ErrLineTooLong, and followed by the next line.
func TestReadLines(t *testing.T) {
	t.Parallel()
	at := strings.Repeat("x", MaxLineLen)
	over := at + "y"
	huge := strings.Repeat("z", 1<<20)
	ok := func(text string) Line { return Line{Text: text} }
	tooLong := Line{Err: ErrLineTooLong}
	tests := []struct {
		name, in string
		want     []Line
	}{
		{"empty", "", nil},
		{"lines", "a\nb\n", []Line{ok("a"), ok("b")}},
		{"last line without ending", "a\nb", []Line{ok("a"), ok("b")}},
		{"blank lines", "\n\na\n", []Line{ok(""), ok(""), ok("a")}},
		{"CRLF", "a\r\nb\r\n", []Line{ok("a"), ok("b")}},
		{"at the limit", at + "\nnext\n", []Line{ok(at), ok("next")}},
		{"at the limit with CRLF", at + "\r\nnext\n", []Line{ok(at), ok("next")}},
		{"one byte over", over + "\nnext\n", []Line{tooLong, ok("next")}},
		{"one byte over with CRLF", over + "\r\nnext\n", []Line{tooLong, ok("next")}},
		{"huge", "a\n" + huge + "\nb\n" + huge + "\n", []Line{ok("a"), tooLong, ok("b"), tooLong}},
		{"huge last line without ending", "a\n" + huge, []Line{ok("a"), tooLong}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readAll(t, strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("read error %v, want nil at the end of input", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i].Text != tt.want[i].Text || !errors.Is(got[i].Err, tt.want[i].Err) {
					t.Errorf("line %d: got %.40q, %v; want %.40q, %v",
						i, got[i].Text, got[i].Err, tt.want[i].Text, tt.want[i].Err)
				}
			}
		})
	}
}

// TestReadLinesReadError checks that the lines read before a read error
// are sent, the last one without its ending too, and then the error.
func TestReadLinesReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	got, err := readAll(t, io.MultiReader(strings.NewReader("a\nb"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Errorf("read error %v, want %v", err, boom)
	}
	if len(got) != 2 || got[0].Text != "a" || got[1].Text != "b" {
		t.Errorf("lines %q, want a and b", got)
	}
}

// TestConsoleSkipsLongLine checks that the console answers a line over
// MaxLineLen with an error line and goes on with the next commands.
func TestConsoleSkipsLongLine(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	// The commands run here (/as, quit) do not reach the sandbox.
	c := &Console{out: &out, user: users[0], channel: channels[0]}
	in := strings.Repeat("x", 70<<10) + "\n/as bob\nquit\n/as carol\n"
	if err := c.Serve(context.Background(), strings.NewReader(in), false); err != nil {
		t.Fatalf("Serve: %v\noutput:\n%s", err, out.String())
	}
	want := "error: the line is longer than 64 KiB and was ignored\n" +
		"You are bob in #general.\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}
