package pinterest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

// TestSendDeadline: under a send deadline, POST /pins and a token refresh
// are sent only while a whole request (RequestTimeout, 10 s here) fits
// before it; otherwise nothing is sent and the error is ErrNoTime.
func TestSendDeadline(t *testing.T) {
	pin := pinterest.PinRequest{BoardID: "b1", ImageURL: "https://cdn.example/a.png"}
	t.Run("room for the request", func(t *testing.T) {
		e := newEnv(t, nil)
		_, s, _ := e.account(t, "1", boards(1)...)
		ctx := pinterest.WithSendDeadline(context.Background(), t0.Add(10*time.Second), e.clk.Now)
		if _, err := e.c.CreatePin(ctx, s, pin); err != nil {
			t.Fatalf("CreatePin with exactly RequestTimeout left: %v", err)
		}
	})
	t.Run("too little time for the POST", func(t *testing.T) {
		e := newEnv(t, nil)
		_, s, _ := e.account(t, "1", boards(1)...)
		ctx := pinterest.WithSendDeadline(context.Background(), t0.Add(10*time.Second-time.Millisecond), e.clk.Now)
		if _, err := e.c.CreatePin(ctx, s, pin); !errors.Is(err, pinterest.ErrNoTime) || errors.Is(err, pinterest.ErrOutcomeUnknown) {
			t.Fatalf("CreatePin = %v, want ErrNoTime alone", err)
		}
		wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 0)
	})
	t.Run("401, then too little time for the refresh", func(t *testing.T) {
		e := newEnv(t, nil)
		_, s, st := e.account(t, "1", boards(1)...)
		// The 401 is held while the deadline's clock moves on 25 s: 5 s
		// are left, less than a refresh may take.
		clock := pinteresttest.NewClock(t0)
		until, arrived := make(chan struct{}), make(chan struct{}, 1)
		f := pinteresttest.ExpiredToken(pinteresttest.PathPins)
		f.Until, f.Arrived = until, arrived
		e.srv.Inject(f)
		ctx := pinterest.WithSendDeadline(context.Background(), t0.Add(30*time.Second), clock.Now)
		errc := make(chan error, 1)
		go func() {
			_, err := e.c.CreatePin(ctx, s, pin)
			errc <- err
		}()
		<-arrived
		clock.Advance(25 * time.Second)
		close(until)
		if err := <-errc; !errors.Is(err, pinterest.ErrNoTime) {
			t.Fatalf("CreatePin = %v, want ErrNoTime", err)
		}
		wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 1)
		wantCount(t, e.srv, http.MethodPost, pinteresttest.PathToken, 0)
		if attempts, _ := st.snapshot(); attempts != 0 {
			t.Errorf("%d token saves, want none: no refresh was sent", attempts)
		}
		// The grant is intact: without a deadline the pin is made.
		if _, err := e.c.CreatePin(context.Background(), s, pin); err != nil {
			t.Fatalf("CreatePin after: %v", err)
		}
	})
}

// TestTokenSaveBounded: the save of a rotated token runs on the refresh's
// own goroutine, which no caller cancels; it gets a context bounded by
// RequestTimeout, so a stuck store cannot hold the account's refresh for
// ever.
func TestTokenSaveBounded(t *testing.T) {
	e := newEnv(t, nil)
	cred := e.srv.AddAccount("1", "user1", boards(1)...)
	var deadline time.Time
	var hasDeadline bool
	save := func(ctx context.Context, _ *oauth2.Token) error {
		deadline, hasDeadline = ctx.Deadline()
		return nil
	}
	tok := cred.Token()
	tok.Expiry = t0.Add(-time.Minute) // expired: the first use refreshes
	s, err := pinterest.NewSession(tok, save)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := e.c.CreatePin(context.Background(), s, pinterest.PinRequest{BoardID: "b1", ImageURL: "https://cdn.example/a.png"}); err != nil {
		t.Fatal(err)
	}
	if !hasDeadline || deadline.After(before.Add(10*time.Second+time.Second)) {
		t.Fatalf("the token save ran with deadline %v (set %v), want one within RequestTimeout (10 s) of the refresh", deadline, hasDeadline)
	}
}
