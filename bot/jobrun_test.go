package bot

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// startedJob queues one pin of a one-image message by user on the full
// account "acct" straight through the engine, lets its slot come free and
// returns the job as the engine handed it out (to the world's onJob
// channel), running and not yet run by the bot.
func startedJob(w *world, started chan actors.Job, user snowflake.ID) actors.Job {
	w.t.Helper()
	w.fill("acct", 100)
	m := w.addImages(w.channel.ID, 1, "a cat")
	q := queuedPin{Guild: w.guild.ID, Channel: w.channel.ID, Message: m.ID, Image: 1, Images: 1, User: user, From: w.channel.ID, Board: "board-1"}
	qd, err := w.engine.Enqueue(w.ctx, "acct", [][]byte{q.encode()})
	if err != nil || len(qd.Jobs) != 1 {
		w.t.Fatalf("Enqueue: %+v, %v", qd, err)
	}
	w.setClocks(qd.Jobs[0].Due)
	select {
	case j := <-started:
		return j
	case <-w.ctx.Done():
		w.t.Fatal("the queued pin did not start")
		return actors.Job{}
	}
}

// onJobTo makes the world's engine hand its jobs to a channel instead of
// the bot.
func onJobTo(o *worldOptions) chan actors.Job {
	ch := make(chan actors.Job, 16)
	o.onJob = func(j actors.Job) { ch <- j }
	return ch
}

// TestRecoveredJobWhileClosing: a recovered job the bot is handed while it
// closes stays running, for the next start to look for its pin: its slot
// is kept, it never goes back to the queue (it may have been sent by the
// run that started it) and it is not reported "may exist".
func TestRecoveredJobWhileClosing(t *testing.T) {
	w, j := aliceStartedJob(t)
	if err := w.bot.Close(w.ctx); err != nil {
		t.Fatal(err)
	}
	j.Recovered = true
	w.bot.RunJob(j)
	js := w.jobs("acct")
	if len(js) != 1 || js[0].State != actors.JobRunning {
		t.Fatalf("jobs after a recovered job ran at close: %+v, want it still running", js)
	}
	st, err := w.engine.Status(w.ctx, "acct")
	if err != nil || st.Pending != 1 || st.Queued != 0 {
		t.Fatalf("status %+v (%v), want its slot still pending and nothing queued", st, err)
	}
	if pins := w.ps.PinsFor("acct"); len(pins) != 0 {
		t.Fatalf("%d pins sent", len(pins))
	}
}

// TestQueuedPinLateForWorker: a queued pin that reaches a worker after
// its slot's send deadline (it waited for a worker that long) is not
// failed (nor sent): it goes back to the head of the queue with its slot
// released.
func TestQueuedPinLateForWorker(t *testing.T) {
	w, j := aliceStartedJob(t)
	w.setClocks(j.Slot.Deadline.Add(-DefaultSlotMargin + time.Second))
	w.bot.RunJob(j)
	wantBackInQueue(w, j)
}

// TestQueuedPinLinksUnreadable: when the links store cannot be read, a
// queued pin is tried again later, not failed as "no longer linked".
func TestQueuedPinLinksUnreadable(t *testing.T) {
	w, j := aliceStartedJob(t)
	if err := w.links.Close(); err != nil {
		t.Fatal(err)
	}
	w.bot.RunJob(j)
	wantBackInQueue(w, j)
}

// wantBackInQueue checks that job j, run by the bot, sent nothing and is
// waiting again on "acct" with its slot released.
func wantBackInQueue(w *world, j actors.Job) {
	w.t.Helper()
	js := w.jobs("acct")
	if len(js) != 1 || js[0].State != actors.JobWaiting || js[0].ID != j.ID {
		w.t.Fatalf("jobs %+v, want job %d waiting again", js, j.ID)
	}
	if st, _ := w.engine.Status(w.ctx, "acct"); st.Pending != 0 {
		w.t.Fatalf("status %+v, want its slot released", st)
	}
	if pins := w.ps.PinsFor("acct"); len(pins) != 0 {
		w.t.Fatalf("%d pins sent", len(pins))
	}
}

// aliceStartedJob makes a world whose engine hands its jobs to the test,
// links alice to "acct" and returns her queued pin as the engine handed
// it out (startedJob).
func aliceStartedJob(t *testing.T) (*world, actors.Job) {
	t.Helper()
	var o worldOptions
	started := onJobTo(&o)
	w := newWorld(t, o)
	user := w.addUser("alice")
	w.link(user, "acct", "alice")
	return w, startedJob(w, started, user)
}

// TestQueuedPinUnknownWhileClosing: a queued pin whose answer is lost
// while the bot closes stays running, for the next start to look for its
// pin, instead of ending "may exist": no search starts once Close has
// begun.
func TestQueuedPinUnknownWhileClosing(t *testing.T) {
	w, alice, _, j, _ := queuedJobWorld(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	f := pinteresttest.CreatedButFailed(http.StatusBadGateway)
	f.Arrived, f.Until = arrived, release
	w.ps.Inject(f)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		w.bot.RunJob(j)
	}()
	<-arrived
	closed := make(chan error, 1)
	go func() { closed <- w.bot.Close(w.ctx) }()
	<-w.bot.closingCh
	close(release)
	<-ran
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	js, _, err := w.engine.Jobs(w.ctx, "1001")
	if err != nil || len(js) != 1 || js[0].State != actors.JobRunning {
		t.Fatalf("jobs %+v (%v), want the job still running", js, err)
	}
	if st, err := w.engine.Status(w.ctx, "1001"); err != nil || st.Pending != 1 {
		t.Fatalf("status %+v (%v), want its slot still pending", st, err)
	}
	if dms := w.dms(alice); strings.Contains(dms, "❔") {
		t.Fatalf("DMs %q: the pin was reported \"may exist\"", dms)
	}
}
