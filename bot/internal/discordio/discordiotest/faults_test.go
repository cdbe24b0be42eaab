package discordiotest

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/disgoorg/disgo/discord"

	"github.com/pinbot/pinbot/bot/internal/discordio"
)

func TestInjectTimes(t *testing.T) {
	w := newWorld(t)
	f := w.f
	tooMany := &discordio.Error{Status: http.StatusTooManyRequests, Message: "You are being rate limited.", RetryAfter: 1500 * time.Millisecond}
	f.Inject(OpSend, 2, Fault{Err: tooMany})
	f.Inject(OpSend, 1, Fault{Err: &discordio.Error{Status: http.StatusBadGateway}})
	msg := discord.MessageCreate{Content: "hi"}
	for n := range 2 {
		err := f.Send(bg, w.channel, msg)
		e, ok := discordio.AsError(err)
		if !ok || e != tooMany || e.RetryAfter != 1500*time.Millisecond {
			t.Fatalf("Send %d: %v, want the injected 429", n, err)
		}
	}
	err := f.Send(bg, w.channel, msg)
	wantRefusal(t, "third Send", err, http.StatusBadGateway, 0)
	if discordio.Refused(err) {
		t.Fatal("a 502 counts as refused")
	}
	wantOK(t, "fourth Send", f.Send(bg, w.channel, msg))
	if got := len(f.Sent(w.channel)); got != 1 {
		t.Fatalf("Sent = %d messages, want only the one that passed", got)
	}
	if got := f.Calls(OpSend); got != 4 {
		t.Fatalf("Calls(Send) = %d, want 4", got)
	}
	// Faults are per operation.
	if f.Calls(OpMessage) != 0 {
		t.Fatal("Calls(Message) counted sends")
	}
}

func TestInjectAlwaysAndClear(t *testing.T) {
	w := newWorld(t)
	f := w.f
	f.Inject(OpMessage, Always, Fault{Err: context.DeadlineExceeded})
	for range 3 {
		if _, err := f.Message(bg, w.channel, w.message.ID); !isDeadline(err) {
			t.Fatalf("Message under Always = %v", err)
		}
	}
	f.Clear(OpMessage)
	_, err := f.Message(bg, w.channel, w.message.ID)
	wantOK(t, "Message after Clear", err)

	// The zero Fault is a timeout before Discord saw the request.
	f.Inject(OpOpenDM, 1, Fault{})
	if _, err := f.OpenDM(bg, w.user); !isDeadline(err) {
		t.Fatalf("OpenDM under the zero Fault = %v", err)
	}
	f.Inject(OpGatewayBot, 1, Fault{Err: errors.New("connection reset")})
	if _, err := f.GatewayBot(bg); err == nil || discordio.Refused(err) {
		t.Fatalf("GatewayBot under a transport error = %v", err)
	}
	f.Inject(OpSetCommands, 1, Fault{})
	if n, err := f.SetCommands(bg, []discord.ApplicationCommandCreate{discord.SlashCommandCreate{Name: "pin"}}); !isDeadline(err) || n != 0 || len(f.Commands()) != 0 {
		t.Fatalf("SetCommands under a fault = %d, %v, commands %v", n, err, f.Commands())
	}
	for _, op := range []Op{OpChannel, OpGuild, OpRoles, OpMember} {
		f.Inject(op, 1, Fault{})
	}
	_, e1 := f.Channel(bg, w.channel)
	_, e2 := f.Guild(bg, w.guild)
	_, e3 := f.Roles(bg, w.guild)
	_, e4 := f.Member(bg, w.guild, w.user)
	for i, err := range []error{e1, e2, e3, e4} {
		if !isDeadline(err) {
			t.Fatalf("read %d under a fault = %v", i, err)
		}
	}
}

func TestInjectHang(t *testing.T) {
	w := newWorld(t)
	f := w.f
	i := f.SlashCommand(w.in(), "pin")
	hung := make(chan struct{})
	f.Inject(OpRespond, 1, Fault{Hang: true, Hung: hung})
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- f.Respond(ctx, i.ID(), i.Token(), deferral) }()
	<-hung
	select {
	case err := <-done:
		t.Fatalf("a hanging Respond answered before its context ended: %v", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("hanging Respond = %v, want its context's error", err)
	}
	if _, ok := f.Response(i.Token()); ok {
		t.Fatal("a hanging Respond took effect")
	}
	// The fault is spent: the next Respond goes through.
	wantOK(t, "Respond after the hang", f.Respond(bg, i.ID(), i.Token(), deferral))
}

func TestInjectLost(t *testing.T) {
	w := newWorld(t)
	f := w.f
	i := f.SlashCommand(w.in(), "pin")
	f.Inject(OpRespond, 1, Fault{Lost: true})
	err := f.Respond(bg, i.ID(), i.Token(), deferral)
	if !isDeadline(err) || discordio.Refused(err) {
		t.Fatalf("lost Respond = %v, want a timeout", err)
	}
	if _, ok := f.Response(i.Token()); !ok {
		t.Fatal("a lost Respond did not take effect")
	}
	// What the bot does next: ask whether the deferral is there.
	if _, err := f.Original(bg, i.Token()); err != nil {
		t.Fatalf("Original after a lost deferral: %v", err)
	}

	// Lost and Hang: the edit is made, the answer never comes.
	hung := make(chan struct{})
	f.Inject(OpEditOriginal, 1, Fault{Lost: true, Hang: true, Hung: hung})
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- f.EditOriginal(ctx, i.Token(), text("Pinned.")) }()
	<-hung
	if got := f.Text(i.Token()); got != "Pinned." {
		t.Fatalf("Text while the lost edit hangs = %q, want the edit made", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("lost hanging edit = %v", err)
	}

	// A lost answer with its own error.
	f.Inject(OpFollowup, 1, Fault{Lost: true, Err: &discordio.Error{Status: http.StatusInternalServerError}})
	err = f.Followup(bg, i.Token(), discord.MessageCreate{Content: "more"})
	wantRefusal(t, "lost followup", err, http.StatusInternalServerError, 0)
	if len(f.Followups(i.Token())) != 1 {
		t.Fatal("a lost followup was not recorded")
	}
}

func TestDoneContext(t *testing.T) {
	w := newWorld(t)
	f := w.f
	f.Inject(OpSend, 1, Fault{Err: &discordio.Error{Status: http.StatusServiceUnavailable}})
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := f.Send(ctx, w.channel, discord.MessageCreate{Content: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a done context = %v", err)
	}
	if len(f.Sent(w.channel)) != 0 || f.Calls(OpSend) != 1 {
		t.Fatalf("a request with a done context was sent (%d) or not counted (%d)", len(f.Sent(w.channel)), f.Calls(OpSend))
	}
	// The fault still waits for the next call.
	wantRefusal(t, "next Send", f.Send(bg, w.channel, discord.MessageCreate{Content: "x"}), http.StatusServiceUnavailable, 0)
}
