package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// setClocks moves Discord's, Pinterest's and the engine's clocks to t,
// the engine's last: moving it starts the jobs due, which must find the
// other two there already.
func (w *world) setClocks(t time.Time) {
	if w.dclock != nil {
		w.dclock.Set(t)
	}
	w.pclock.Set(t)
	w.eclock.Set(t)
}

// nextJob waits for the next queued pin the bot ran.
func (w *world) nextJob() actors.Job {
	w.t.Helper()
	select {
	case j := <-w.jobDone:
		return j
	case <-w.ctx.Done():
		w.t.Fatal("no queued pin ran")
		return actors.Job{}
	}
}

// jobs returns the account's jobs.
func (w *world) jobs(account string) []actors.Job {
	w.t.Helper()
	js, _, err := w.engine.Jobs(w.ctx, account)
	if err != nil {
		w.t.Fatal(err)
	}
	return js
}

// queueInvocation is /pin messages:messages when_full:queue run by user.
func queueInvocation(user snowflake.ID, messages string) discordtest.Invocation {
	return discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdPin, Options: []discordtest.CommandOption{
		{Name: optMessages, Value: messages}, {Name: optWhenFull, Value: whenFullQueue},
	}}}
}

// maxInWindow returns the most of times in any window (t-width, t].
func maxInWindow(times []time.Time, width time.Duration) int {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	best, lo := 0, 0
	for hi := range times {
		for !times[lo].After(times[hi].Add(-width)) {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// TestPinQueueAtLimit: at 95/100, /pin of 10 images with when_full:queue
// pins 5 now and queues 5, each of which runs at the exact instant its
// slot frees; Pinterest never holds more than 100 in any 12 hours, and
// the user gets the results in one direct message.
func TestPinQueueAtLimit(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true})
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	var counted []time.Time // pins Pinterest holds that the stand-in did not make
	for i := range 95 {
		at := t0.Add(time.Duration(i) * time.Minute)
		w.setClocks(at)
		w.fill("acct", 1)
		counted = append(counted, at)
	}
	w.setClocks(t0.Add(95 * time.Minute))
	m := w.addImages(w.channel.ID, 10, "ten cats")
	text, _ := w.run(queueInvocation(user, m.ID.String()))

	window := w.engine.Config().Window
	first, last := t0.Add(window), t0.Add(4*time.Minute+window)
	for _, want := range []string{
		"5 pinned, 5 queued.",
		"Pin limit reached (100/12h). Queued the remaining 5 pins: the first starts at " + timeText(first) + ", the last at " + timeText(last) + ".",
		"(image 6 of 10) · queued: starts at " + timeText(first),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("reply lacks %q:\n%s", want, text)
		}
	}
	mustNot(t, text, "Skipped", "skipped")
	js := w.jobs("acct")
	if len(js) != 5 {
		t.Fatalf("%d jobs, want 5", len(js))
	}
	for i, j := range js {
		if want := t0.Add(time.Duration(i)*time.Minute + window); j.State != actors.JobWaiting || !j.Due.Equal(want) {
			t.Fatalf("job %d: %v due %v, want waiting due %v", i, j.State, j.Due, want)
		}
	}
	for i, j := range js {
		w.setClocks(j.Due.Add(-time.Millisecond))
		if now := w.jobs("acct"); now[0].ID != j.ID || now[0].State != actors.JobWaiting {
			t.Fatalf("1 ms before job %d is due: %+v", i, now[0])
		}
		if n := len(w.ps.PinsFor("acct")); n != 5+i {
			t.Fatalf("before job %d: %d pins on Pinterest, want %d", i, n, 5+i)
		}
		w.setClocks(j.Due)
		if ran := w.nextJob(); ran.ID != j.ID {
			t.Fatalf("ran job %d, want %d", ran.ID, j.ID)
		}
		pins := w.ps.PinsFor("acct")
		if len(pins) != 6+i || !pins[len(pins)-1].CreatedAt.Equal(j.Due) {
			t.Fatalf("after job %d: %d pins, the last at %v; want %d, at %v", i, len(pins), pins[len(pins)-1].CreatedAt, 6+i, j.Due)
		}
		if img := pins[len(pins)-1].ImageURL; !strings.Contains(img, fmt.Sprintf("img%d.png", 5+i)) {
			t.Errorf("job %d pinned %s, want image %d", i, img, 6+i)
		}
	}
	for _, p := range w.ps.PinsFor("acct") {
		counted = append(counted, p.CreatedAt)
	}
	if n := maxInWindow(counted, window); n != 100 {
		t.Errorf("busiest 12 hours on Pinterest: %d pins, want exactly 100", n)
	}
	for _, j := range w.jobs("acct") {
		if r, ok := decodeJobResult(j.Result); !ok || j.State != actors.JobDone || r.Outcome != jobPinned || r.PinURL == "" {
			t.Errorf("job %d: %v, result %q", j.ID, j.State, j.Result)
		}
	}

	// One digest, after the gathering delay.
	if err := w.digestClock.WaitTimers(w.ctx, 1); err != nil {
		t.Fatal(err)
	}
	w.digestClock.Advance(time.Minute)
	dms, err := w.dc.WaitDMs(w.ctx, user, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(dms) != 1 || strings.Count(dms[0].Content, "✅") != 5 || !strings.Contains(dms[0].Content, "(image 10 of 10)") {
		t.Fatalf("DMs to the user: %+v", dms)
	}
}

// queueOne fills the account and queues one message of one image by
// user, due at t0 plus the window; it returns the job.
func queueOne(w *world, user snowflake.ID) actors.Job {
	w.t.Helper()
	w.fill("acct", 100)
	m := w.addImages(w.channel.ID, 1, "a cat")
	text, _ := w.run(queueInvocation(user, m.ID.String()))
	if !strings.Contains(text, "0 pinned, 1 queued.") || !strings.Contains(text, "Pin limit reached (100/12h), so nothing was pinned.") {
		w.t.Fatalf("reply:\n%s", text)
	}
	js := w.jobs("acct")
	if len(js) != 1 {
		w.t.Fatalf("jobs %+v", js)
	}
	return js[0]
}

// TestQueuedPinFailures: what changed while a pin waited gives the user a
// clear result, and nothing is sent to Pinterest.
func TestQueuedPinFailures(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(w *world, user snowflake.ID, j actors.Job)
		why    string
	}{
		{"message deleted", func(w *world, _ snowflake.ID, j actors.Job) {
			q, _ := decodeQueuedPin(j.Payload)
			if err := w.dc.DeleteMessage(q.Message); err != nil {
				w.t.Fatal(err)
			}
		}, "the message was deleted"},
		{"user left the server", func(w *world, user snowflake.ID, _ actors.Job) {
			if err := w.dc.RemoveMember(w.guild.ID, user); err != nil {
				w.t.Fatal(err)
			}
		}, "you can no longer read that channel"},
		{"account unlinked", func(w *world, user snowflake.ID, _ actors.Job) {
			if err := w.links.Unlink(w.ctx, user.String(), "acct"); err != nil {
				w.t.Fatal(err)
			}
		}, "the Pinterest account is no longer linked to you"},
		{"grant revoked", func(w *world, _ snowflake.ID, _ actors.Job) {
			w.ps.RevokeGrants("acct")
		}, "Pinterest refused Pinbot's access to the account; run /link"},
		{"image removed", func(w *world, _ snowflake.ID, j actors.Job) {
			q, _ := decodeQueuedPin(j.Payload)
			if err := w.dc.DeleteMessage(q.Message); err != nil {
				w.t.Fatal(err)
			}
			if _, err := w.dc.AddMessage(discordtest.Message{ID: q.Message, ChannelID: q.Channel, Content: "edited: no picture"}); err != nil {
				w.t.Fatal(err)
			}
		}, "the image is no longer in the message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, worldOptions{jobs: true})
			user := w.addUser("alice")
			w.link(user, "acct", "alice")
			j := queueOne(w, user)
			tt.break_(w, user, j)
			w.setClocks(j.Due)
			w.nextJob()
			js := w.jobs("acct")
			r, ok := decodeJobResult(js[0].Result)
			if !ok || js[0].State != actors.JobDone || r.Outcome != jobFailed || !strings.Contains(r.Why, tt.why) {
				t.Fatalf("job %v, result %+v; want failed: %s", js[0].State, r, tt.why)
			}
			if pins := w.ps.PinsFor("acct"); len(pins) != 0 {
				t.Fatalf("%d pins sent", len(pins))
			}
			if used := w.used("acct"); used != 0 {
				t.Errorf("used %d after the failed job, want 0 (its slot released)", used)
			}
		})
	}
}

// TestQueuedPinFreshImageURL: a pin queued for longer than Discord's
// signed attachment URLs live still pins: the message is fetched again
// and its fresh URL used, never the one seen when it was queued (which
// Pinterest could no longer fetch).
func TestQueuedPinFreshImageURL(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true, engine: func(c *actors.Config) { c.Window = 48 * time.Hour }})
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	w.fill("acct", 100)
	m := w.addImages(w.channel.ID, 1, "a cat")
	old := m.Attachments[0].URL
	if exp, ok := discordtest.CDNExpiry(old); !ok || !exp.Before(t0.Add(48*time.Hour)) {
		t.Fatalf("attachment URL %s expires %v, want before the job runs", old, exp)
	}
	w.run(queueInvocation(user, m.ID.String()))
	js := w.jobs("acct")
	if strings.Contains(string(js[0].Payload), "cdn.discordapp.com") {
		t.Fatalf("queued payload holds a URL: %s", js[0].Payload)
	}
	w.setClocks(js[0].Due)
	w.nextJob()
	pins := w.ps.PinsFor("acct")
	if len(pins) != 1 || pins[0].ImageURL == old {
		t.Fatalf("pins %+v; want one, with a fresh URL (not %s); jobs %+v; logs:\n%s", pins, old, w.jobs("acct"), w.logs.String())
	}
	// The URL seen when it was queued has expired: Pinterest refuses it.
	sess, err := w.bot.session(w.ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.pc.CreatePin(w.ctx, sess, pinterest.PinRequest{BoardID: "bacct", ImageURL: old, Title: "a cat"})
	if !errors.Is(err, pinterest.ErrImageRejected) {
		t.Fatalf("pin of the expired URL: %v, want ErrImageRejected", err)
	}
}

// TestUnlinkCancelsQueue: unlinking an account cancels the pins the user
// queued with it, says so, and linking it again does not bring them back.
func TestUnlinkCancelsQueue(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true})
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	w.fill("acct", 100)
	m := w.addImages(w.channel.ID, 3, "three cats")
	w.run(queueInvocation(user, m.ID.String()))
	text, _ := w.run(discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdUnlink, Options: []discordtest.CommandOption{{Name: optAccount, Value: "acct"}}}})
	if !strings.Contains(text, "Canceled the 3 pins you had queued with it.") {
		t.Fatalf("unlink reply:\n%s", text)
	}
	w.link(user, "acct", "alice")
	w.setClocks(t0.Add(w.engine.Config().Window + time.Hour))
	if js := w.jobs("acct"); len(js) != 0 {
		t.Fatalf("after relinking: %+v", js)
	}
	if pins := w.ps.PinsFor("acct"); len(pins) != 0 {
		t.Fatalf("%d pins sent", len(pins))
	}
}

// TestWhenFullDefault: the /settings choice makes a /pin without
// when_full, and "Pin to Pinterest", queue at the limit; the option
// overrides it.
func TestWhenFullDefault(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true})
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	w.fill("acct", 100)
	_, in := w.settings(user)
	orig, _ := in.Original()
	if !strings.Contains(string(orig.Components), idWhenFull) {
		t.Fatalf("/settings has no when-full menu: %s", orig.Components)
	}
	text, _ := w.run(discordtest.Invocation{UserID: user, Data: discordtest.SelectMenu{CustomID: idWhenFull, Values: []string{whenFullQueue}, MessageID: orig.ID}})
	must(t, text, "now queue the rest")

	m := w.addImages(w.channel.ID, 2, "two cats")
	text, _ = w.pin(user, m.ID.String())
	must(t, text, "0 pinned, 2 queued.", "Pin limit reached (100/12h), so nothing was pinned. Queued 2 pins: the first starts at")
	text, _ = w.run(discordtest.Invocation{UserID: user, Data: discordtest.ChatInput{Name: cmdPin, Options: []discordtest.CommandOption{
		{Name: optMessages, Value: m.ID.String()}, {Name: optWhenFull, Value: whenFullSkip}}}})
	must(t, text, "Pin limit reached (100/12h), so nothing was pinned with")
	text, _ = w.run(discordtest.Invocation{UserID: user, Data: discordtest.MessageCommand{Name: cmdPinMessage, TargetID: m.ID}})
	must(t, text, "0 pinned, 2 queued.")
	if js := w.jobs("acct"); len(js) != 4 {
		t.Fatalf("%d jobs, want 4", len(js))
	}

	text, _ = w.run(discordtest.Invocation{UserID: user, Data: discordtest.SelectMenu{CustomID: idWhenFull, Values: []string{whenFullSkip}, MessageID: orig.ID}})
	must(t, text, "now skip the rest")
	text, _ = w.pin(user, m.ID.String())
	must(t, text, "Pin limit reached (100/12h), so nothing was pinned with")
}

// TestQueuedPinOutcomeRecordedLater: a queued pin whose outcome the
// engine cannot record at once (its account's state cannot be read for
// now) is recorded when the engine can again: the job does not stay
// running, its slot held and its pin unreported, until a restart.
func TestQueuedPinOutcomeRecordedLater(t *testing.T) {
	w := newWorld(t, worldOptions{jobs: true, faults: true})
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	j := queueOne(w, user)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	w.ps.Inject(pinteresttest.Fault{Method: "POST", Path: pinteresttest.PathPins, Arrived: arrived, Until: release})
	retried := make(chan struct{}, 16)
	w.bot.finishSleep = func(context.Context, time.Time) error {
		select {
		case retried <- struct{}{}:
		default:
		}
		return nil
	}
	w.setClocks(j.Due)
	select {
	case <-arrived:
	case <-w.ctx.Done():
		t.Fatal("the queued pin was not sent")
	}
	// While the pin is sent, the account's actor goes and its state
	// becomes unreadable: the outcome cannot be recorded.
	if err := w.engine.Passivate(w.ctx, func(a string) bool { return a == "acct" }); err != nil {
		t.Fatal(err)
	}
	w.faults.FailLoad("acct", errors.New("state store unreachable"))
	close(release)
	select {
	case <-retried:
	case <-w.ctx.Done():
		t.Fatal("the outcome was not tried again")
	}
	if n := w.faults.Counts().FailedLoads; n == 0 {
		t.Fatal("no load failed")
	}
	w.faults.FailLoad("acct", nil)
	if ran := w.nextJob(); ran.ID != j.ID {
		t.Fatalf("ran job %d, want %d", ran.ID, j.ID)
	}
	js := w.jobs("acct")
	if len(js) != 1 || js[0].State != actors.JobDone {
		t.Fatalf("jobs %+v, want the one done", js)
	}
	if r, ok := decodeJobResult(js[0].Result); !ok || r.Outcome != jobPinned {
		t.Fatalf("result %q, want pinned", js[0].Result)
	}
	if n := len(w.ps.PinsFor("acct")); n != 1 {
		t.Fatalf("%d pins, want 1", n)
	}
}
