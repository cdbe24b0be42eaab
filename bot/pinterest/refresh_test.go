package pinterest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/pinterest"
)

// TestRefreshOutlivesItsCaller: a refresh request that has reached
// Pinterest rotates the refresh token there, whatever happens to the
// answer. When the caller gives up while the refresh is in flight
// (autocomplete's deadline, Close cancelling handlers), the new token must
// still be saved and used, or the old refresh token is dead and the
// account needs a new link. Wait returns once it is saved.
func TestRefreshOutlivesItsCaller(t *testing.T) {
	var (
		mu      sync.Mutex
		valid   = map[string]bool{"R1": true}
		access  = map[string]bool{}
		n       int
		arrived = make(chan struct{}, 1)
		release = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v5/oauth/token":
			_ = r.ParseForm()
			rt := r.PostForm.Get("refresh_token")
			mu.Lock()
			ok := valid[rt]
			delete(valid, rt)
			var at, nrt string
			if ok {
				n++
				at, nrt = "A"+string(rune('1'+n)), "R"+string(rune('1'+n))
				valid[nrt], access[at] = true, true
			}
			first := n == 1
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"code":283,"message":"The authorization grant is invalid"}`))
				return
			}
			if first {
				arrived <- struct{}{}
				<-release // Pinterest rotated; its answer is slow
			}
			_ = json.NewEncoder(w).Encode(map[string]any{
				"access_token": at, "refresh_token": nrt, "token_type": "bearer", "expires_in": 3600,
			})
		case "/v5/boards":
			tok := r.Header.Get("Authorization")
			mu.Lock()
			ok := len(tok) > 7 && access[tok[7:]]
			mu.Unlock()
			if !ok {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"code":2,"message":"Authentication failed."}`))
				return
			}
			_, _ = w.Write([]byte(`{"items":[],"bookmark":null}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := pinterest.New(pinterest.Config{
		ClientID: "id", ClientSecret: "secret", RedirectURL: "https://bot.example/cb",
		APIBase: srv.URL + "/v5", AuthURL: srv.URL + "/oauth/", RequestTimeout: 10 * time.Second,
		Logger: zerolog.Nop(), Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	var smu sync.Mutex
	var saved []*oauth2.Token
	s, err := pinterest.NewSession(&oauth2.Token{AccessToken: "A1", RefreshToken: "R1", Expiry: now.Add(-time.Hour)},
		func(_ context.Context, tok *oauth2.Token) error {
			smu.Lock()
			defer smu.Unlock()
			saved = append(saved, tok)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.ListBoards(ctx, s)
		done <- err
	}()
	<-arrived
	cancel() // the caller gives up (autocomplete's deadline, Close, ...)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("ListBoards of the caller that gave up = %v, want context.Canceled", err)
	}
	close(release)
	if err := c.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	smu.Lock()
	if len(saved) != 1 || saved[0].RefreshToken != "R2" {
		t.Fatalf("tokens saved after the abandoned refresh: %+v, want the rotated one (R2)", saved)
	}
	smu.Unlock()

	if _, err := c.ListBoards(context.Background(), s); err != nil {
		smu.Lock()
		n := len(saved)
		smu.Unlock()
		t.Fatalf("after a cancelled in-flight refresh the grant is lost: %v (reauth=%v, tokens saved: %d)",
			err, errors.Is(err, pinterest.ErrReauthRequired), n)
	}
}
