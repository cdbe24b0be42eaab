package bot

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/disgoorg/snowflake/v2"

	"github.com/pinbot/pinbot/bot/discordtest"
	"github.com/pinbot/pinbot/bot/links"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestConcurrentBatchesOneAccount is the second "done when": 20
// simultaneous /pin batches of 10 images, from 20 servers and 20 users who
// all linked one Pinterest account. Pinterest never holds more than 100 of
// its pins in any 12 hours, every slot is accounted for, and every
// interaction was acknowledged within Discord's 3 seconds, measured on the
// wall clock by the Discord stand-in.
func TestConcurrentBatchesOneAccount(t *testing.T) {
	const batches, perBatch = 20, 10
	w := newWorld(t, worldOptions{realDiscordClock: true, workers: 8})
	cred := w.ps.AddAccount("1001", "shared", pinteresttest.Board{ID: "b1", Name: "Shared"})

	type job struct {
		user    snowflake.ID
		channel snowflake.ID
		msgs    string
	}
	jobs := make([]job, batches)
	for i := range jobs {
		g, err := w.dc.AddGuild(discordtest.Guild{Name: fmt.Sprintf("guild-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ch, err := w.dc.AddChannel(discordtest.Channel{GuildID: g.ID, Name: "pins"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := w.dc.AddMember(discordtest.Member{GuildID: g.ID, Username: fmt.Sprintf("user%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.links.Link(w.ctx, m.UserID.String(), links.Account{ID: "1001", Username: "shared", DefaultBoard: "b1", DefaultBoardName: "Shared"}, cred.Token()); err != nil {
			t.Fatal(err)
		}
		var msgs []discordtest.Message
		for range perBatch {
			msgs = append(msgs, w.addImages(ch.ID, 1, ""))
		}
		jobs[i] = job{user: m.UserID, channel: ch.ID, msgs: ids(msgs...)}
	}

	ins := make([]*discordtest.Interaction, batches)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			in, err := w.dc.Interact(discordtest.Invocation{ChannelID: j.channel, UserID: j.user,
				Data: discordtest.ChatInput{Name: cmdPin, Options: []discordtest.CommandOption{{Name: optMessages, Value: j.msgs}}}})
			if err != nil {
				t.Error(err)
				return
			}
			ins[i] = in
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	pinned, limited := 0, 0
	for _, in := range ins {
		w.waitDone(in)
		lat, ok := in.FirstResponseLatency()
		if !ok || lat >= discordtest.InteractionDeadline {
			t.Errorf("interaction %d acknowledged after %v (ok=%v)", in.ID, lat, ok)
		}
		text := w.text(in)
		pinned += strings.Count(text, "✅")
		if strings.Contains(text, "Pin limit reached (100/12h)") {
			limited++
		}
	}
	if n := w.ps.MaxInWindow("1001", 12*time.Hour); n > 100 {
		t.Fatalf("Pinterest holds %d pins of the account in one 12-hour window", n)
	}
	if n := len(w.ps.PinsFor("1001")); n != 100 || pinned != 100 {
		t.Fatalf("%d pins on Pinterest, %d reported; want 100 and 100", n, pinned)
	}
	if n := w.used("1001"); n != 100 {
		t.Fatalf("engine count %d, want 100", n)
	}
	if limited < batches-100/perBatch {
		t.Fatalf("%d batches told of the limit, want at least %d", limited, batches-100/perBatch)
	}
	if d := w.dc.DuplicateAcks(); d != 0 {
		t.Fatalf("%d duplicate acknowledgements", d)
	}
}

// TestAckUnderLoad: with a single worker busy on a slow Pinterest call,
// further interactions are still acknowledged at once; their work waits.
func TestAckUnderLoad(t *testing.T) {
	w := newWorld(t, worldOptions{realDiscordClock: true, workers: 1})
	alice := w.addUser("alice")
	w.link(alice, "1001", "alicepins")
	arrived := make(chan struct{}, 1)
	w.ps.Inject(pinteresttest.Fault{Path: pinteresttest.PathPins, Arrived: arrived, Hang: true})
	first := w.interact(pinInvocation(alice, w.addImages(w.channel.ID, 1, "").ID.String()))
	select {
	case <-arrived:
	case <-w.ctx.Done():
		t.Fatal("the pin never reached Pinterest")
	}
	// The only worker is stuck in Pinterest; ten more commands arrive.
	var more []*discordtest.Interaction
	for range 10 {
		more = append(more, w.interact(discordtest.Invocation{UserID: alice, Data: discordtest.ChatInput{Name: cmdSettings}}))
	}
	ctx, cancel := context.WithTimeout(w.ctx, 10*time.Second)
	defer cancel()
	for _, in := range more {
		r, err := in.WaitResponse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() || r.Kind != discordtest.KindCallback {
			t.Fatalf("first response %+v", r)
		}
		if lat, _ := in.FirstResponseLatency(); lat >= discordtest.InteractionDeadline {
			t.Fatalf("acknowledged after %v", lat)
		}
		if len(in.Responses()) != 1 {
			t.Fatalf("queued interaction already answered: %+v", in.Responses())
		}
	}
	w.ps.Close() // ends the hung request: its outcome is unknown
	w.waitDone(first)
	must(t, w.text(first), "failed: Pinterest did not answer clearly")
	for _, in := range more {
		w.waitDone(in)
		must(t, w.text(in), "12-hour pins: 1/100")
	}
}
