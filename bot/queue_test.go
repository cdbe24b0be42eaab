package bot

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/persistence"
)

// queueWorld is a world whose engine hands the jobs that start to a
// channel instead of running them: a job runs only as far as the test
// takes it (Engine.Finish).
type queueWorld struct {
	*world
	started chan actors.Job
}

func newQueueWorld(t *testing.T) *queueWorld {
	t.Helper()
	started := make(chan actors.Job, 1024)
	w := newWorld(t, worldOptions{onJob: func(j actors.Job) { started <- j }})
	return &queueWorld{world: w, started: started}
}

// nextStarted returns the next job the engine started.
func (w *queueWorld) nextStarted() actors.Job {
	w.t.Helper()
	select {
	case j := <-w.started:
		return j
	case <-w.ctx.Done():
		w.t.Fatal("no job started")
		return actors.Job{}
	}
}

// enqueue queues one pin per image of each message, queued by user.
func (w *queueWorld) enqueue(account string, user snowflake.ID, ms ...discordtest.Message) []actors.Job {
	w.t.Helper()
	var payloads [][]byte
	for _, m := range ms {
		for i := range m.Attachments {
			payloads = append(payloads, queuedPin{Guild: w.guild.ID, Channel: m.ChannelID, Message: m.ID,
				Image: i + 1, Images: len(m.Attachments), User: user, From: m.ChannelID, Board: "b" + account}.encode())
		}
	}
	q, err := w.engine.Enqueue(w.ctx, account, payloads)
	if err != nil || q.Refused != 0 || len(q.Jobs) != len(payloads) {
		w.t.Fatalf("enqueue: %d jobs, %d refused, %v; want %d", len(q.Jobs), q.Refused, err, len(payloads))
	}
	return q.Jobs
}

// finish ends a running job with outcome o and result r.
func (w *queueWorld) finish(j actors.Job, o actors.Outcome, r jobResult) {
	w.t.Helper()
	o.Result = r.encode()
	if o.Done {
		o.At = w.engine.Now()
	}
	if _, err := w.engine.Finish(w.ctx, j, o); err != nil {
		w.t.Fatal(err)
	}
}

// jobs returns the account's jobs in state s.
func (w *queueWorld) jobs(account string, s persistence.JobState) []actors.Job {
	w.t.Helper()
	all, _, err := w.engine.Jobs(w.ctx, account)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []actors.Job
	for _, j := range all {
		if j.State == s {
			out = append(out, j)
		}
	}
	return out
}

// queue runs /queue and returns its text and message.
func (w *queueWorld) queue(user snowflake.ID) (string, discordtest.Message) {
	w.t.Helper()
	text, in := w.run(discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdQueue}})
	orig, ok := in.Original()
	if !ok {
		w.t.Fatal("no /queue message")
	}
	return text, orig
}

// press runs a component interaction on message msg and returns what the
// message reads afterwards. It checks that the bot deferred an update of
// that message and then edited it, once, within 2000 characters, with
// empty allowed_mentions.
func (w *queueWorld) press(user snowflake.ID, msg discordtest.Message, data discordtest.InvocationData) (string, discordtest.Message) {
	w.t.Helper()
	in := w.interact(discordtest.Invocation{UserID: user, Data: data})
	w.waitDone(in)
	rs := in.Responses()
	if len(rs) != 2 {
		w.t.Fatalf("interaction %d: %d responses, want a deferral and one edit", in.ID, len(rs))
	}
	if rs[0].Kind != discordtest.KindCallback || !rs[0].OK() || rs[0].Type != discord.InteractionResponseTypeDeferredUpdateMessage {
		w.t.Fatalf("interaction %d: first response %s type %d status %d, want an accepted deferred update", in.ID, rs[0].Kind, rs[0].Type, rs[0].Status)
	}
	if rs[1].Kind != discordtest.KindEditOriginal || !rs[1].OK() || rs[1].MessageID != msg.ID {
		w.t.Fatalf("interaction %d: second response %s of message %d, status %d %s; want an accepted edit of message %d", in.ID, rs[1].Kind, rs[1].MessageID, rs[1].Status, rs[1].Error, msg.ID)
	}
	checkNoMentions(w.t, rs[1])
	orig, ok := in.Original()
	if !ok || orig.ID != msg.ID {
		w.t.Fatalf("interaction %d: original %d, want the /queue message %d", in.ID, orig.ID, msg.ID)
	}
	return orig.Content, orig
}

// queueComps are the components of a /queue message, decoded.
type queueComps struct {
	menu    []discord.StringSelectMenuOption
	buttons []discord.ButtonComponent
}

// componentsOf decodes a /queue message's components and checks them
// against Discord's limits: at most 5 rows, one menu of at most 25
// options or up to 5 buttons per row, custom IDs and values of at most
// 100 characters, labels of at most 100 (options) and 80 (buttons).
func componentsOf(t *testing.T, m discordtest.Message) queueComps {
	t.Helper()
	var rows []discord.ActionRowComponent
	if len(m.Components) > 0 {
		if err := json.Unmarshal(m.Components, &rows); err != nil {
			t.Fatalf("components %s: %v", m.Components, err)
		}
	}
	if len(rows) > 5 {
		t.Fatalf("%d action rows, more than 5", len(rows))
	}
	var c queueComps
	for _, row := range rows {
		if len(row.Components) > 5 {
			t.Fatalf("a row of %d components", len(row.Components))
		}
		for _, comp := range row.Components {
			switch comp := comp.(type) {
			case discord.StringSelectMenuComponent:
				if comp.CustomID != idQueueMessage || len(comp.Options) > maxSelectOptions || len(row.Components) != 1 {
					t.Fatalf("menu %+v", comp)
				}
				for _, o := range comp.Options {
					if len(o.Value) > 100 || utf8.RuneCountInString(o.Label) > 100 || utf8.RuneCountInString(o.Description) > 100 {
						t.Fatalf("option %+v over Discord's limits", o)
					}
				}
				c.menu = append(c.menu, comp.Options...)
			case discord.ButtonComponent:
				if len(comp.CustomID) > 100 || utf8.RuneCountInString(comp.Label) > 80 {
					t.Fatalf("button %+v over Discord's limits", comp)
				}
				c.buttons = append(c.buttons, comp)
			default:
				t.Fatalf("component %T", comp)
			}
		}
	}
	return c
}

// option returns the menu option whose value is v.
func (c queueComps) option(t *testing.T, v string) discord.StringSelectMenuOption {
	t.Helper()
	for _, o := range c.menu {
		if o.Value == v {
			return o
		}
	}
	t.Fatalf("no menu option %q in %+v", v, c.menu)
	return discord.StringSelectMenuOption{}
}

// jump is how a /queue line links a message.
func jump(w *queueWorld, m discordtest.Message) string {
	return fmt.Sprintf("<https://discord.com/channels/%d/%d/%d>", w.guild.ID, m.ChannelID, m.ID)
}

// lineWith returns the one line of text holding every one of subs.
func lineWith(t *testing.T, text string, subs ...string) string {
	t.Helper()
	var found []string
	for l := range strings.SplitSeq(text, "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(l, s)
		}
		if all {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d lines hold %q, want 1; reply:\n%s", len(found), subs, text)
	}
	return found[0]
}

// TestQueueList: /queue lists, per account, the running pins, the waiting
// ones in queue order with their start times as Discord timestamps equal
// to the engine's, and what ran recently, newest first.
func TestQueueList(t *testing.T) {
	w := newQueueWorld(t)
	alice, bob := w.addUser("alice"), w.addUser("bob")

	text, _ := w.queue(alice)
	must(t, text, msgNoAccount)
	w.link(alice, "1001", "first")
	text, _ = w.queue(alice)
	must(t, text, msgQueueEmpty)

	// The account's first three pins free a minute apart, 12 hours on.
	for range 3 {
		w.fill("1001", 1)
		w.eclock.Advance(time.Minute)
	}
	w.fill("1001", 94)
	m1, m2, m3, m4 := w.addImages(w.channel.ID, 2, ""), w.addImages(w.channel.ID, 1, ""), w.addImages(w.channel.ID, 3, ""), w.addImages(w.channel.ID, 1, "")

	// Three pins start at once and end: pinned, unknown, failed.
	ran := w.enqueue("1001", alice, m1, m2)
	for _, j := range ran {
		if j.State != actors.JobRunning {
			t.Fatalf("job %d is %v, want running", j.ID, j.State)
		}
	}
	w.finish(ran[0], actors.Outcome{Done: true}, jobResult{Outcome: jobPinned, PinURL: "https://www.pinterest.com/pin/41/"})
	w.eclock.Advance(time.Minute)
	w.finish(ran[1], actors.Outcome{Unknown: true}, jobResult{Outcome: jobUnknown, Why: "Pinterest did not answer"})
	w.eclock.Advance(time.Minute)
	w.finish(ran[2], actors.Outcome{}, jobResult{Outcome: jobFailed, Why: "the image is too small"})

	// The failure freed a slot: m3's first image runs, the rest waits;
	// bob, who linked the account too, queues m4.
	w.link(bob, "1001", "first")
	w.enqueue("1001", alice, m3)
	w.enqueue("1001", bob, m4)
	running, waiting := w.jobs("1001", actors.JobRunning), w.jobs("1001", actors.JobWaiting)
	if len(running) != 1 || len(waiting) != 3 {
		t.Fatalf("%d running, %d waiting; want 1, 3", len(running), len(waiting))
	}
	for i, j := range waiting {
		if want := t0.Add(12*time.Hour + time.Duration(i)*time.Minute); !j.Due.Equal(want) {
			t.Fatalf("waiting job %d due %v, want %v", i, j.Due, want)
		}
	}

	text, msg := w.queue(alice)
	must(t, text, msgQueueTitle,
		"**@first** — 12-hour pins: 100/100",
		"▶️ "+jump(w, m3)+" (image 1 of 3) · running now",
		"⏳ `1` "+jump(w, m3)+" (image 2 of 3) · starts at "+timeText(waiting[0].Due),
		"⏳ `1` "+jump(w, m3)+" (image 3 of 3) · starts at "+timeText(waiting[1].Due),
		"⏳ `2` "+jump(w, m4)+fmt.Sprintf(" · queued by <@%d> · starts at ", bob)+timeText(waiting[2].Due),
		"❌ failed: the image is too small · "+timeText(t0.Add(5*time.Minute)),
		"❔ may exist (counts toward the limit): Pinterest did not answer · "+timeText(t0.Add(4*time.Minute)),
		"✅ pinned → <https://www.pinterest.com/pin/41/> · "+timeText(t0.Add(3*time.Minute)))
	if strings.Contains(text, "queued by <@"+alice.String()) {
		t.Errorf("alice's own pins say who queued them:\n%s", text)
	}
	c := componentsOf(t, msg)
	if len(c.menu) != 2 || len(c.buttons) != 1 {
		t.Fatalf("menu %+v, buttons %+v; want 2 options and 1 button", c.menu, c.buttons)
	}
	o := c.option(t, "1001/"+m3.ID.String())
	if o.Label != "Message 1: cancel its 2 waiting pins" || o.Description != "@first · the first starts at 21:00:00 UTC (in 11h 55m)" {
		t.Errorf("option %+v", o)
	}
	c.option(t, "1001/"+m4.ID.String())
	if b := c.buttons[0]; b.CustomID != idQueueAll+"/1001" || b.Label != "Cancel all waiting pins" || b.Style != discord.ButtonStyleDanger {
		t.Errorf("button %+v", b)
	}

	// Bob owns the account too: he sees the same pins, alice's marked.
	text, _ = w.queue(bob)
	must(t, text, "⏳ `1` "+jump(w, m3)+fmt.Sprintf(" (image 2 of 3) · queued by <@%d>", alice), "⏳ `2` "+jump(w, m4)+" · starts")

	if err := w.links.MarkRelinkNeeded(w.ctx, "1001"); err != nil {
		t.Fatal(err)
	}
	text, _ = w.queue(alice)
	must(t, text, "**@first** — 12-hour pins: 100/100 — needs /link again\n▶️ ")
}

// TestQueueOthersPins: another user's pins on an account the user has not
// linked are neither shown nor canceled, whatever the component
// interaction says; the user's own pins there (queued before an unlink)
// are.
func TestQueueOthersPins(t *testing.T) {
	w := newQueueWorld(t)
	alice, mallory := w.addUser("alice"), w.addUser("mallory")
	w.link(alice, "1001", "alicepins")
	w.link(mallory, "6666", "mallorypins")
	w.fill("1001", 100)
	w.fill("6666", 100)
	m1, m2 := w.addImages(w.channel.ID, 2, ""), w.addImages(w.channel.ID, 1, "")
	w.enqueue("1001", alice, m1)
	w.enqueue("6666", mallory, m2)

	text, msg := w.queue(mallory)
	must(t, text, "**@mallorypins**", jump(w, m2))
	mustNot(t, text, "alicepins", m1.ID.String())
	for _, o := range componentsOf(t, msg).menu {
		if strings.HasPrefix(o.Value, "1001/") {
			t.Fatalf("mallory's menu offers %+v", o)
		}
	}

	// Hand-made interactions naming alice's account.
	for _, data := range []discordtest.InvocationData{
		discordtest.Button{CustomID: idQueueAll + "/1001", MessageID: msg.ID},
		discordtest.SelectMenu{CustomID: idQueueMessage, Values: []string{"1001/" + m1.ID.String()}, MessageID: msg.ID},
	} {
		text, _ := w.press(mallory, msg, data)
		must(t, text, msgQueueGone, "**@mallorypins**", jump(w, m2))
		mustNot(t, text, "alicepins", m1.ID.String())
		if n := len(w.jobs("1001", actors.JobWaiting)); n != 2 {
			t.Fatalf("after %+v alice has %d waiting pins, want 2", data, n)
		}
	}

	// A pin mallory queued on the account herself can be canceled by her,
	// and only it.
	own := w.enqueue("1001", mallory, m2)
	text, _ = w.press(mallory, msg, discordtest.Button{CustomID: idQueueAll + "/1001", MessageID: msg.ID})
	must(t, text, "Canceled 1 queued pin.", "**@mallorypins**")
	mustNot(t, text, "alicepins", m1.ID.String())
	left := w.jobs("1001", actors.JobWaiting)
	if len(left) != 2 || left[0].ID == own[0].ID || left[1].ID == own[0].ID {
		t.Fatalf("alice's account has %+v waiting, want alice's 2 pins", left)
	}

	// An account no one links.
	text, _ = w.press(mallory, msg, discordtest.Button{CustomID: idQueueAll + "/9999", MessageID: msg.ID})
	must(t, text, msgQueueGone)
}

// TestQueueCancelMessage: the menu cancels one message's waiting pins and
// the message shows the refreshed list; picking it again (a stale menu)
// is answered, not an error.
func TestQueueCancelMessage(t *testing.T) {
	w := newQueueWorld(t)
	alice := w.addUser("alice")
	w.link(alice, "1001", "first")
	w.fill("1001", 100)
	m1, m2 := w.addImages(w.channel.ID, 2, ""), w.addImages(w.channel.ID, 1, "")
	w.enqueue("1001", alice, m1, m2)

	_, msg := w.queue(alice)
	pick := discordtest.SelectMenu{CustomID: idQueueMessage, Values: []string{"1001/" + m1.ID.String()}, MessageID: msg.ID}
	text, msg := w.press(alice, msg, pick)
	must(t, text, "Canceled 2 queued pins.", msgQueueTitle, "⏳ `1` "+jump(w, m2))
	mustNot(t, text, m1.ID.String())
	left := w.jobs("1001", actors.JobWaiting)
	if len(left) != 1 {
		t.Fatalf("%d pins waiting, want m2's", len(left))
	}
	if p, err := decodeQueuedPin(left[0].Payload); err != nil || p.Message != m2.ID {
		t.Fatalf("left %+v (%v), want m2's pin", p, err)
	}
	c := componentsOf(t, msg)
	if len(c.menu) != 1 || c.menu[0].Value != "1001/"+m2.ID.String() {
		t.Fatalf("refreshed menu %+v, want m2 only", c.menu)
	}

	text, _ = w.press(alice, msg, pick)
	must(t, text, msgQueueGone, "⏳ `1` "+jump(w, m2))
	if n := len(w.jobs("1001", actors.JobWaiting)); n != 1 {
		t.Fatalf("%d pins waiting, want 1", n)
	}
}

// TestQueueCancelAll: "Cancel all" cancels one account's waiting pins,
// leaves another's and the running ones.
func TestQueueCancelAll(t *testing.T) {
	w := newQueueWorld(t)
	alice := w.addUser("alice")
	w.link(alice, "1001", "first")
	w.link(alice, "2002", "second")
	w.fill("1001", 99)
	w.fill("2002", 100)
	m1, m2, m3 := w.addImages(w.channel.ID, 2, ""), w.addImages(w.channel.ID, 2, ""), w.addImages(w.channel.ID, 1, "")
	w.enqueue("1001", alice, m1, m2) // the first runs, three wait
	w.enqueue("2002", alice, m3)

	text, msg := w.queue(alice)
	must(t, text, "**@first**", "running now", "**@second**", jump(w, m3))
	c := componentsOf(t, msg)
	if len(c.buttons) != 2 || c.buttons[0].Label != "Cancel all on @first" || c.buttons[1].CustomID != idQueueAll+"/2002" {
		t.Fatalf("buttons %+v", c.buttons)
	}
	text, _ = w.press(alice, msg, discordtest.Button{CustomID: c.buttons[0].CustomID, MessageID: msg.ID})
	must(t, text, "Canceled 3 queued pins.", "**@first**", "▶️ "+jump(w, m1)+" (image 1 of 2) · running now", "**@second**", "⏳ `1` "+jump(w, m3))
	mustNot(t, text, "⏳ `1` "+jump(w, m1), m2.ID.String())
	if r, wt := w.jobs("1001", actors.JobRunning), w.jobs("1001", actors.JobWaiting); len(r) != 1 || len(wt) != 0 {
		t.Fatalf("1001: %d running, %d waiting; want 1, 0", len(r), len(wt))
	}
	if n := len(w.jobs("2002", actors.JobWaiting)); n != 1 {
		t.Fatalf("2002: %d waiting, want 1", n)
	}
}

// TestQueueStaleButton: a "Cancel all" pressed after its pins ran is
// answered with what happened.
func TestQueueStaleButton(t *testing.T) {
	w := newQueueWorld(t)
	alice := w.addUser("alice")
	w.link(alice, "1001", "first")
	w.fill("1001", 100)
	m := w.addImages(w.channel.ID, 1, "")
	w.enqueue("1001", alice, m)
	_, msg := w.queue(alice)

	w.eclock.Advance(12 * time.Hour) // the slot frees: the pin starts
	w.finish(w.nextStarted(), actors.Outcome{Done: true}, jobResult{Outcome: jobPinned, PinURL: "https://www.pinterest.com/pin/7/"})
	text, msg := w.press(alice, msg, discordtest.Button{CustomID: idQueueAll + "/1001", MessageID: msg.ID})
	must(t, text, msgQueueGone, "**@first** — 12-hour pins: 1/100", "✅ pinned → <https://www.pinterest.com/pin/7/>")
	if c := componentsOf(t, msg); len(c.menu)+len(c.buttons) != 0 {
		t.Fatalf("components %+v, want none with nothing waiting", c)
	}
}

// TestQueueFitsOneMessage: a long queue is cut to one message of at most
// 2000 characters that ends with how many lines it leaves out; the menu
// offers the first 25 messages.
func TestQueueFitsOneMessage(t *testing.T) {
	w := newQueueWorld(t)
	alice := w.addUser("alice")
	w.link(alice, "1001", "first")
	w.fill("1001", 90)
	var ms []discordtest.Message
	for range 40 {
		ms = append(ms, w.addImages(w.channel.ID, 2, ""))
	}
	w.enqueue("1001", alice, ms...) // 10 run, 70 wait
	for _, j := range w.jobs("1001", actors.JobRunning) {
		w.finish(j, actors.Outcome{Unknown: true}, jobResult{Outcome: jobUnknown, Why: strings.Repeat("slow ", 100)})
	}
	items := 10 + 70 // the done jobs shown, and the waiting ones

	text, msg := w.queue(alice)
	if n := utf8.RuneCountInString(text); n > maxMessageRunes {
		t.Fatalf("reply of %d characters", n)
	}
	m := regexp.MustCompile(`\n… and (\d+) more$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("reply does not end with how much it leaves out:\n%s", text)
	}
	shown := strings.Count(text, "\n⏳ ") + strings.Count(text, "\n❔ ")
	if fmt.Sprint(items-shown) != m[1] || shown == 0 {
		t.Fatalf("%d lines shown, %s more said; want %d in all", shown, m[1], items)
	}
	c := componentsOf(t, msg)
	if len(c.menu) != maxSelectOptions || c.menu[24].Value != "1001/"+ms[29].ID.String() {
		t.Fatalf("menu of %d options ending %+v; want the 25 messages from the sixth", len(c.menu), c.menu[len(c.menu)-1])
	}
}

// TestQueueFitLines: fitLines keeps everything that fits, and otherwise
// whole lines and a count of the item lines left out, within max.
func TestQueueFitLines(t *testing.T) {
	lines := []queueLine{{text: "**a**"}, {text: "1234567890", item: true}, {text: "1234567890", item: true}, {text: "**b**"}, {text: "1234567890", item: true}}
	for _, tc := range []struct {
		max  int
		want string
	}{
		{100, "T\n**a**\n1234567890\n1234567890\n**b**\n1234567890"},
		{46, "T\n**a**\n1234567890\n1234567890\n**b**\n1234567890"},
		{45, "T\n**a**\n1234567890\n… and 2 more"},
		{7 + moreRoom, "T\n**a**\n… and 3 more"},
		{6 + moreRoom, "T\n… and 3 more"},
	} {
		got := fitLines("T", lines, tc.max)
		if got != tc.want || utf8.RuneCountInString(got) > tc.max {
			t.Errorf("fitLines(max %d) = %q, want %q", tc.max, got, tc.want)
		}
	}
}
