package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot"
	"github.com/pinbot/pinbot/bot/discordtest"
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

// TestCommandsMatchTheBot: the console's help lists exactly the commands
// the bot's command table offers it, beside its own.
func TestCommandsMatchTheBot(t *testing.T) {
	t.Parallel()
	var listed []string
	for _, line := range strings.Split(Commands, "\n") {
		if !strings.HasPrefix(line, "  ") || strings.HasPrefix(line, "   ") {
			continue
		}
		verb := strings.TrimPrefix(strings.Fields(line)[0], "/")
		if slices.Contains(consoleOnly, verb) {
			continue
		}
		if f := strings.Fields(line); verb == "cancel" && f[1] == "all" {
			verb = "cancel all"
		}
		if !slices.Contains(listed, verb) {
			listed = append(listed, verb)
		}
	}
	var offered []string
	for _, c := range bot.ConsoleCommands() {
		offered = append(offered, c.Verb)
	}
	slices.Sort(listed)
	slices.Sort(offered)
	if !slices.Equal(listed, offered) {
		t.Errorf("the console lists %q, the bot's table offers it %q", listed, offered)
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

// sendDM sends user a direct message with the JSON body over the Discord
// stand-in's REST API, as the bot does: it opens the DM channel, then
// posts to it.
func sendDM(t *testing.T, dc *discordtest.Server, user snowflake.ID, body string) {
	t.Helper()
	post := func(path, body string) []byte {
		t.Helper()
		rq, err := http.NewRequest(http.MethodPost, dc.APIURL()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		rq.Header.Set("Authorization", "Bot "+dc.Token())
		rq.Header.Set("Content-Type", "application/json")
		rs, err := http.DefaultClient.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Body.Close()
		b, err := io.ReadAll(rs.Body)
		if err != nil || rs.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s, %v", path, rs.StatusCode, b, err)
		}
		return b
	}
	var ch struct {
		ID snowflake.ID `json:"id"`
	}
	if err := json.Unmarshal(post("/users/@me/channels", fmt.Sprintf(`{"recipient_id":"%d"}`, user)), &ch); err != nil {
		t.Fatal(err)
	}
	post(fmt.Sprintf("/channels/%d/messages", ch.ID), body)
}

// TestConsoleDMs: /dms shows each direct message as the user reads it in
// Discord, rendered as replies are (markdown resolved, links, mentions,
// timestamps in the reader's zone against the reader's clock), under the
// time of day it was sent.
func TestConsoleDMs(t *testing.T) {
	t.Parallel()
	clock := discordtest.NewManualClock(t0)
	sb := &Sandbox{discord: discordtest.NewServer(discordtest.WithClock(clock.Now))}
	t.Cleanup(sb.discord.Close)
	var err error
	if sb.images, err = startImageServer(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.images.close(context.Background()) })
	if err := sb.seedDiscord(); err != nil {
		t.Fatal(err)
	}
	reader := time.FixedZone("UTC+2", 2*60*60)
	var out bytes.Buffer
	c := &Console{sb: sb, out: &out, user: users[0], channel: channels[0],
		now: func() time.Time { return clock.Now().In(reader) }}
	ctx := context.Background()

	c.Exec(ctx, "/dms")
	if want := "Pinbot has sent alice no direct message in this run.\n"; out.String() != want {
		t.Fatalf("/dms before any DM:\n%s\nwant\n%s", out.String(), want)
	}

	ran := itoa(t0.Add(-2 * time.Minute).Unix())
	content := "**Queued pins that ran:**\n" +
		"✅ <https://discord.com/channels/900/100/1005> (image 3 of 4) → <https://www.pinterest.com/pin/1/> on @alice\\_pins, " +
		"queued by <@12> in <#100> · <t:" + ran + ":T> (<t:" + ran + ":R>)"
	body, err := json.Marshal(map[string]string{"content": content})
	if err != nil {
		t.Fatal(err)
	}
	sendDM(t, sb.discord, users[0].ID, string(body))
	clock.Advance(time.Minute)
	out.Reset()
	c.Exec(ctx, "/dms")
	want := "── DM from Pinbot, 11:00:00 ──\n" +
		"Queued pins that ran:\n" +
		"✅ https://discord.com/channels/900/100/1005 (image 3 of 4) → https://www.pinterest.com/pin/1/ on @alice_pins, " +
		"queued by @bob in #general · 10:58:00 (3m ago)\n"
	if out.String() != want {
		t.Errorf("/dms:\n%s\nwant\n%s", out.String(), want)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}
