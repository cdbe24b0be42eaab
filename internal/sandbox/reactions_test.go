package sandbox

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
)

// standInConsole is a console over the Discord stand-in seeded with the
// demo world and the image server, with no bot: what the console does to
// Discord shows on the stand-in.
type standInConsole struct {
	t   *testing.T
	sb  *Sandbox
	con *Console
	out *bytes.Buffer
}

func newStandInConsole(t *testing.T) *standInConsole {
	t.Helper()
	sb := &Sandbox{discord: discordtest.NewServer()}
	t.Cleanup(sb.discord.Close)
	var err error
	if sb.images, err = startImageServer(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.images.close(context.Background()) })
	if err := sb.seedDiscord(); err != nil {
		t.Fatal(err)
	}
	out := &bytes.Buffer{}
	return &standInConsole{t: t, sb: sb, con: sb.Console(out), out: out}
}

// exec runs one line and returns what it printed.
func (s *standInConsole) exec(line string) string {
	s.t.Helper()
	start := s.out.Len()
	if s.con.Exec(context.Background(), line) {
		s.t.Fatalf("%q quit the console", line)
	}
	if err := s.con.Err(); err != nil {
		s.t.Fatal(err)
	}
	return s.out.String()[start:]
}

// expect runs line and fails unless its output holds every want.
func (s *standInConsole) expect(line string, want ...string) string {
	s.t.Helper()
	got := s.exec(line)
	for _, w := range want {
		if !strings.Contains(got, w) {
			s.t.Errorf("%q printed:\n%s\nwant it to contain %q", line, got, w)
		}
	}
	return got
}

// reactors returns who reacted to message id with emoji, on the stand-in.
func (s *standInConsole) reactors(id snowflake.ID, emoji string) []snowflake.ID {
	s.t.Helper()
	m, ok := s.sb.discord.Message(id)
	if !ok {
		s.t.Fatalf("no message %d", id)
	}
	for _, r := range m.Reactions {
		if r.Emoji == emoji {
			return r.UserIDs
		}
	}
	return nil
}

var postedID = regexp.MustCompile(`posted message ([0-9]+) in `)

// TestConsolePost: /post adds a message with the images asked for to the
// current channel as the current user, served by the image server, and
// prints its ID and link; /messages lists it.
func TestConsolePost(t *testing.T) {
	t.Parallel()
	s := newStandInConsole(t)
	for _, bad := range []string{"/post 0", "/post 11 too many", "/post 2024 was a good year", "/post -1"} {
		s.expect(bad, "error: usage: /post [N] [TEXT], N images from 1 to 10")
	}
	if n := len(s.sb.postedMessages()); n != 0 {
		t.Fatalf("%d messages posted by refused commands", n)
	}

	s.exec("/as bob")
	s.exec("/channel art")
	got := s.expect("/post 3 Three  colors", "bob posted message ", " in #art with 3 images: https://discord.com/channels/900/200/")
	sub := postedID.FindStringSubmatch(got)
	if sub == nil {
		t.Fatalf("no message ID in:\n%s", got)
	}
	id, _ := snowflake.Parse(sub[1])
	if !strings.Contains(got, "React with /react "+sub[1]+" (📌 pins its images), or pin it with /pin "+sub[1]) {
		t.Errorf("/post printed no hint to react:\n%s", got)
	}
	m, ok := s.sb.discord.Message(id)
	if !ok {
		t.Fatalf("message %d is not on the stand-in", id)
	}
	if m.ChannelID != 200 || m.AuthorID != 12 || m.GuildID != GuildID || m.Content != "Three  colors" || len(m.Attachments) != 3 {
		t.Fatalf("posted %+v; want bob's message in #art with 3 images and its text", m)
	}
	for i, a := range m.Attachments {
		if want := "image-" + strconv.Itoa(i+1) + ".png"; a.Filename != want || a.ContentType != "image/png" || a.Width == 0 {
			t.Errorf("attachment %d: %+v, want %s, an image/png with a size", i, a, want)
		}
		rs, err := http.Get(a.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(rs.Body)
		rs.Body.Close()
		if rs.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("\x89PNG")) {
			t.Errorf("GET %s: %d, %.8q; want a PNG", a.URL, rs.StatusCode, body)
		}
	}

	// One image by default; all the rest is text.
	s.exec("/as alice")
	s.exec("/channel general")
	got = s.expect("/post Hello there", "alice posted message ", " in #general with 1 image: ")
	id2, _ := snowflake.Parse(postedID.FindStringSubmatch(got)[1])
	if m, _ := s.sb.discord.Message(id2); m.Content != "Hello there" || len(m.Attachments) != 1 || m.ChannelID != 100 {
		t.Errorf("posted %+v; want alice's one image in #general, text Hello there", m)
	}
	if m2, _ := s.sb.discord.Message(id2); m2.Attachments[0].URL == m.Attachments[0].URL {
		t.Errorf("two posts share the image address %s", m.Attachments[0].URL)
	}
	if ids := s.sb.postedMessages(); !slices.Equal(ids, []snowflake.ID{id, id2}) {
		t.Errorf("posted messages %v, want %v", ids, []snowflake.ID{id, id2})
	}
	list := s.expect("/messages", "REACTIONS", "https://discord.com/channels/900/200/"+sub[1], "1 image, posted by alice")
	if l := lineWith(list, sub[1]+" "); !strings.Contains(l, "#art") || !strings.Contains(l, "3 images, posted by bob") {
		t.Errorf("/messages lists bob's post as %q", l)
	}
}

// TestConsoleReact: /react and /unreact add and take off the current
// user's reaction on the stand-in, 📌 unless another emoji is named, on a
// message of the current channel named by ID or on one a link names;
// they refuse messages the user cannot reach, and say when there is
// nothing to do.
func TestConsoleReact(t *testing.T) {
	t.Parallel()
	s := newStandInConsole(t)
	alice, bob := users[0].ID, users[1].ID

	for _, bad := range []string{"/react", "/react 1001 📌 extra", "/unreact"} {
		s.expect(bad, "error: usage: /")
	}
	s.expect("/react abc", `error: "abc" is neither a message ID nor a message link; /messages lists them`)
	s.expect("/react 4242", "error: there is no message 4242; /messages lists them")
	s.expect("/react 2001", "error: message 2001 is in #art, not #general: /channel art first, or give its link")
	s.expect("/react 3001", "error: there is no message 3001 in #general")
	s.expect("/react https://discord.com/channels/900/300/3001", "error: alice cannot view #staff")
	s.expect("/react https://discord.com/channels/999/100/1001", "error: the link points into server 999; the demo server is 900")
	s.expect("/react https://discord.com/channels/900/555/1001", "error: the demo server has no channel 555")
	s.expect("/react 1001 pin", `error: "pin" is neither a unicode emoji`)
	if m, _ := s.sb.discord.Message(1001); len(m.Reactions) != 0 {
		t.Fatalf("refused commands reacted: %+v", m.Reactions)
	}

	s.expect("/react 1002",
		"alice reacted with 📌 to message 1002 in #general.",
		"Pinbot pins its images and answers by direct message: /dms shows it, /queue what it queued.")
	if got := s.reactors(1002, "📌"); !slices.Equal(got, []snowflake.ID{alice}) {
		t.Fatalf("📌 on 1002 by %v, want alice", got)
	}
	s.expect("/react 1002", "(alice has reacted with 📌 to message 1002 already: Discord sends Pinbot nothing again.")
	// A link reaches another channel the user can view.
	s.expect("/react https://discord.com/channels/900/200/2001", "alice reacted with 📌 to message 2001 in #art.")
	s.expect("/react <https://ptb.discord.com/channels/900/100/1001> 👍",
		"alice reacted with 👍 to message 1001 in #general.",
		"Pinbot pins on 📌 reactions only in this server: it leaves this one alone.")
	s.expect("/react 1001 pin:123456789012345678", "alice reacted with :pin: to message 1001")
	if got := s.reactors(1001, "pin:123456789012345678"); !slices.Equal(got, []snowflake.ID{alice}) {
		t.Errorf("custom emoji on 1001 by %v, want alice", got)
	}
	s.exec("/as bob")
	s.expect("/react 1002", "bob reacted with 📌 to message 1002")
	if got := s.reactors(1002, "📌"); !slices.Equal(got, []snowflake.ID{alice, bob}) {
		t.Fatalf("📌 on 1002 by %v, want alice and bob", got)
	}
	s.expect("/messages", "📌 alice, bob", "👍 alice · :pin: alice")

	s.expect("/unreact 1002",
		"bob took the 📌 off message 1002 in #general.",
		"Pinbot cancels the pins of that message still waiting in bob's queue and says so by direct message (/dms); pins already made stay.")
	if got := s.reactors(1002, "📌"); !slices.Equal(got, []snowflake.ID{alice}) {
		t.Fatalf("📌 on 1002 by %v after bob's /unreact, want alice", got)
	}
	s.expect("/unreact 1002", "(bob has no 📌 reaction on message 1002: there is nothing to take off.)")
	s.exec("/as alice")
	s.expect("/unreact 1001 👍", "alice took the 👍 off message 1001", "Pinbot pins on 📌 reactions only")
	if got := s.reactors(1001, "👍"); len(got) != 0 {
		t.Errorf("👍 on 1001 by %v after /unreact, want nobody", got)
	}
}

// lineWith returns the first line of s holding sub, or "".
func lineWith(s, sub string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
