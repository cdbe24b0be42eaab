package pinterest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/bot/pinterest"
)

// TestExchangeAsksForContinuousRefresh: with ContinuousRefresh set, the
// code exchange carries continuous_refresh=true (Pinterest asks apps
// created before 25 September 2025 to send it); without it, it does not.
func TestExchangeAsksForContinuousRefresh(t *testing.T) {
	for _, on := range []bool{true, false} {
		got := make(chan string, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = r.ParseForm()
			got <- r.PostForm.Get("continuous_refresh")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"a","refresh_token":"r","token_type":"bearer","expires_in":3600}`))
		}))
		c, err := pinterest.New(pinterest.Config{
			ClientID: "id", ClientSecret: "secret", RedirectURL: "https://bot.example/cb",
			APIBase: srv.URL + "/v5", AuthURL: srv.URL + "/oauth/", RequestTimeout: 10 * time.Second,
			Logger: zerolog.Nop(), ContinuousRefresh: on,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exchange(context.Background(), "code"); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		want := ""
		if on {
			want = "true"
		}
		if v := <-got; v != want {
			t.Errorf("ContinuousRefresh %v: continuous_refresh = %q, want %q", on, v, want)
		}
	}
}
