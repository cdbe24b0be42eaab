package sandbox

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/disgoorg/snowflake/v2"
)

// TestConsoleEdit: /edit adds the images asked for (1 by default) to a
// message its user posted, keeping those it has, on the stand-in, the new
// ones served by the image server beside the others; it refuses bad
// counts, more than 10 images on the message, and messages not posted
// with /post or posted by another user.
func TestConsoleEdit(t *testing.T) {
	t.Parallel()
	s := newStandInConsole(t)
	s.expect("help", "  /edit MESSAGE [+N]  ", "  /delete MESSAGE  ")
	got := s.exec("/post 3 Three colors")
	id := postedID.FindStringSubmatch(got)[1]
	mid, _ := snowflake.Parse(id)
	before, _ := s.sb.discord.Message(mid)

	usage := "error: usage: /edit MESSAGE [+N], MESSAGE a message ID of the current channel or a message link"
	for _, bad := range []string{"/edit", "/edit " + id + " +1 more"} {
		s.expect(bad, usage)
	}
	for _, bad := range []string{"x", "+", "+x", "-1", "+-1", "++1", "1.5"} {
		s.expect("/edit "+id+" "+bad, "error: "+`"`+bad+`" is not a number of images to add; `+usage[len("error: "):])
	}
	for _, bad := range []string{"0", "+0", "+11", "300", "99999999999999999999"} {
		s.expect("/edit "+id+" "+bad, "error: an edit adds 1 to 10 images, not "+strings.TrimPrefix(bad, "+"))
	}
	s.expect("/edit "+id+" +8", "error: message "+id+" has 3 images, and Discord allows 10 on a message: it takes 7 images more at most")
	s.expect("/edit abc", `error: "abc" is neither a message ID nor a message link; /messages lists them`)
	s.expect("/edit 4242", "error: there is no message 4242; /messages lists them")
	s.expect("/edit 1001", "error: message 1001 was not posted with /post: only those can be edited or deleted in the sandbox")
	s.expect("/edit 2001", "error: message 2001 is in #art, not #general")
	s.exec("/as bob")
	s.expect("/edit "+id, "error: message "+id+" was posted by alice: only its author can edit it (/as alice first)")
	s.exec("/as alice")
	if m, _ := s.sb.discord.Message(mid); len(m.Attachments) != 3 || !m.EditedAt.IsZero() {
		t.Fatalf("refused edits changed the message: %+v", m)
	}

	s.expect("/edit "+id+" +2", "alice edited message "+id+" in #general: 2 images added, 5 now: https://discord.com/channels/900/100/"+id)
	m, _ := s.sb.discord.Message(mid)
	if len(m.Attachments) != 5 || m.EditedAt.IsZero() {
		t.Fatalf("after /edit +2: %d attachments, edited at %v; want 5, stamped", len(m.Attachments), m.EditedAt)
	}
	for i, a := range before.Attachments {
		if m.Attachments[i] != a {
			t.Errorf("attachment %d changed: %+v, was %+v", i, m.Attachments[i], a)
		}
	}
	folder := before.Attachments[0].URL[:strings.LastIndex(before.Attachments[0].URL, "/")+1]
	for i, a := range m.Attachments[3:] {
		name := []string{"image-4.png", "image-5.png"}[i]
		if a.ID == 0 || a.Filename != name || a.URL != folder+name || a.ContentType != "image/png" {
			t.Errorf("new attachment %d: %+v; want %s in %s with an ID", i, a, name, folder)
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
	// One by default, and a link reaches the message from another channel.
	s.exec("/channel art")
	s.expect("/edit https://discord.com/channels/900/100/"+id, "alice edited message "+id+" in #general: 1 image added, 6 now")
	if m, _ := s.sb.discord.Message(mid); len(m.Attachments) != 6 {
		t.Errorf("after /edit: %d attachments, want 6", len(m.Attachments))
	}
	s.expect("/messages", "6 images, posted by alice")
	s.exec("/channel general")
	s.expect("/edit "+id+" +4", "alice edited message "+id+" in #general: 4 images added, 10 now")
	s.expect("/edit "+id, "error: message "+id+" has 10 images, the most Discord allows on a message")
}

// TestConsoleDelete: /delete deletes a message its user posted from the
// stand-in, after which the console knows it no more; it refuses the
// others.
func TestConsoleDelete(t *testing.T) {
	t.Parallel()
	s := newStandInConsole(t)
	got := s.exec("/post 2 Two")
	id := postedID.FindStringSubmatch(got)[1]
	mid, _ := snowflake.Parse(id)

	for _, bad := range []string{"/delete", "/delete " + id + " " + id} {
		s.expect(bad, "error: usage: /delete MESSAGE, MESSAGE a message ID of the current channel or a message link")
	}
	s.expect("/delete 4242", "error: there is no message 4242; /messages lists them")
	s.expect("/delete 1002", "error: message 1002 was not posted with /post")
	s.exec("/as carol")
	s.expect("/delete "+id, "error: message "+id+" was posted by alice: only its author can delete it (/as alice first)")
	if _, ok := s.sb.discord.Message(mid); !ok {
		t.Fatal("a refused /delete deleted the message")
	}

	s.exec("/as alice")
	s.expect("/delete "+id,
		"alice deleted message "+id+" in #general.",
		"Pinbot cancels its pins still waiting that auto-pin or a pin reaction queued")
	if _, ok := s.sb.discord.Message(mid); ok {
		t.Fatal("the message is still on the stand-in after /delete")
	}
	if list := s.exec("/messages"); strings.Contains(list, id) {
		t.Errorf("/messages lists the deleted message:\n%s", list)
	}
	s.expect("/delete "+id, "error: there is no message "+id)
	s.expect("/edit "+id, "error: there is no message "+id)
}
