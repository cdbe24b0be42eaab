package discordiotest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/disgoorg/disgo/discord"
	"github.com/disgoorg/snowflake/v2"
)

// TestConcurrentUse runs many interactions' requests, sends, reads and
// fault injections at once; -race checks the locking, the counts check
// that no request was lost or doubled.
func TestConcurrentUse(t *testing.T) {
	w := newWorld(t)
	f := w.f
	const n = 32
	inters := make([]discord.ApplicationCommandInteraction, n)
	for k := range inters {
		inters[k] = f.SlashCommand(w.in(), "pin")
	}
	// Every Message call of the first n/2 times fails; the rest pass.
	f.Inject(OpMessage, n/2, Fault{})

	var wg sync.WaitGroup
	var failed atomic.Int32
	errs := make(chan error, 8*n)
	for k, i := range inters {
		wg.Go(func() {
			if err := f.Respond(bg, i.ID(), i.Token(), deferral); err != nil {
				errs <- err
				return
			}
			if _, err := f.Original(bg, i.Token()); err != nil {
				errs <- err
			}
			if err := f.EditOriginal(bg, i.Token(), text(fmt.Sprint("done ", k))); err != nil {
				errs <- err
			}
			if err := f.Followup(bg, i.Token(), discord.MessageCreate{Content: "more"}); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			if err := f.Send(bg, w.channel, discord.MessageCreate{Content: fmt.Sprint("send ", k)}); err != nil {
				errs <- err
			}
			if _, err := f.OpenDM(bg, w.user); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			// Read while the others write.
			if _, err := f.Message(bg, w.channel, w.message.ID); isDeadline(err) {
				failed.Add(1)
			}
			_, _ = f.Channel(bg, w.thread)
			_ = f.Calls(OpRespond)
			_ = f.Text(i.Token())
			_ = f.Sent(w.channel)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	for k, i := range inters {
		if got, want := f.Text(i.Token()), fmt.Sprint("done ", k); got != want {
			t.Errorf("interaction %d: Text = %q, want %q", k, got, want)
		}
		if len(f.Followups(i.Token())) != 1 {
			t.Errorf("interaction %d: %d followups", k, len(f.Followups(i.Token())))
		}
	}
	if got := len(f.Sent(w.channel)); got != n {
		t.Errorf("Sent = %d messages, want %d", got, n)
	}
	for _, op := range []Op{OpRespond, OpOriginal, OpEditOriginal, OpFollowup, OpSend, OpOpenDM, OpMessage, OpChannel} {
		if got := f.Calls(op); got != n {
			t.Errorf("Calls(%s) = %d, want %d", op, got, n)
		}
	}
	if got := failed.Load(); got != n/2 {
		t.Errorf("%d Message calls failed, want the %d injected", got, n/2)
	}
	seen := map[snowflake.ID]bool{}
	for _, i := range inters {
		if seen[i.ID()] {
			t.Fatalf("ID %d given twice", i.ID())
		}
		seen[i.ID()] = true
	}
}
