package pinterest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
	"github.com/pinbot/pinbot/internal/logtest"
)

// TestMarkRoundTrip: a pin's mark travels in its link's query, after
// what the link already held, and comes back in CreatePin's answer and in
// the listing; a pin made behind an error answer (the outcome unknown)
// is found by its mark, with its creation time from Pinterest's ledger.
func TestMarkRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(1)...)
	ctx := t.Context()

	req := pinReq
	req.Link = "https://discord.com/channels/1/2/3?x=y#frag"
	req.Mark = "r-01J_abc"
	pin, err := e.c.CreatePin(ctx, s, req)
	if err != nil {
		t.Fatal(err)
	}
	const marked = "https://discord.com/channels/1/2/3?x=y&pinbot=r-01J_abc#frag"
	if pin.Mark != req.Mark || pin.Link != marked {
		t.Errorf("CreatePin = Mark %q Link %q; want %q, %q", pin.Mark, pin.Link, req.Mark, marked)
	}
	if got := e.srv.Pins()[0].Link; got != marked {
		t.Errorf("Pinterest keeps link %q, want %q", got, marked)
	}

	// The answer to the second is lost after Pinterest made the pin.
	e.clk.Advance(90 * time.Second)
	e.srv.Inject(pinteresttest.CreatedButFailed(http.StatusBadGateway))
	lost := pinReq
	lost.Mark = "r-lost"
	if _, err := e.c.CreatePin(ctx, s, lost); !errors.Is(err, pinterest.ErrOutcomeUnknown) {
		t.Fatalf("CreatePin behind a 502: %v, want ErrOutcomeUnknown", err)
	}
	e.clk.Advance(time.Minute)
	pins, err := e.c.ListPins(ctx, s, pinterest.ListOptions{Since: t0})
	if err != nil {
		t.Fatal(err)
	}
	if len(pins) != 2 {
		t.Fatalf("listed %d pins, want 2", len(pins))
	}
	found := pins[0]
	if found.Mark != "r-lost" || !found.CreatedAt.Equal(t0.Add(90*time.Second)) || found.ID != e.srv.Pins()[1].ID ||
		found.URL != "https://www.pinterest.com/pin/"+found.ID+"/" || found.BoardID != "b1" {
		t.Errorf("lost pin listed as %+v; want mark r-lost created at t0+90s", found)
	}
	if pins[1].Mark != req.Mark || pins[1].ID != pin.ID || pins[1].Link != marked {
		t.Errorf("first pin listed as %+v", pins[1])
	}
}

// TestPinRequestMark: Validate refuses a mark that a link could not
// carry verbatim, or without a link to carry it, or that makes the link
// too long; MarkOf reads only a single well-formed mark.
func TestPinRequestMark(t *testing.T) {
	long := "https://discord.com/" + strings.Repeat("a", 2048-len("https://discord.com/")-len("?pinbot=m"))
	tests := []struct {
		link, mark string
		err        string // "" for valid
	}{
		0:  {"https://discord.com/channels/1/2/3", "abc-DEF_123", ""},
		1:  {"https://discord.com/channels/1/2/3", strings.Repeat("m", 64), ""},
		2:  {"https://discord.com/channels/1/2/3", strings.Repeat("m", 65), "Mark is not"},
		3:  {"https://discord.com/channels/1/2/3", "a b", "Mark is not"},
		4:  {"https://discord.com/channels/1/2/3", "a&pinbot=b", "Mark is not"},
		5:  {"https://discord.com/channels/1/2/3", "é", "Mark is not"},
		6:  {"", "abc", "needs a Link"},
		7:  {"https://discord.com/x?pinbot=old", "abc", "cannot carry the mark"},
		8:  {long, "m", ""},
		9:  {long, "mm", "with its mark has 2049 characters"},
		10: {"https://discord.com/x", "", ""},
	}
	for i, tt := range tests {
		req := pinterest.PinRequest{BoardID: "b1", ImageURL: "https://cdn.example/a.png", Link: tt.link, Mark: tt.mark}
		err := req.Validate()
		if (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("step %d: Validate(%q, %q) = %v, want %q", i, tt.link, tt.mark, err, tt.err)
		}
	}

	for i, tt := range []struct{ link, want string }{
		0: {"https://discord.com/channels/1/2/3?pinbot=abc", "abc"},
		1: {"https://discord.com/channels/1/2/3?a=1&pinbot=abc#x", "abc"},
		2: {"https://discord.com/channels/1/2/3", ""},
		3: {"https://discord.com/channels/1/2/3?pinbot=a&pinbot=b", ""},
		4: {"https://discord.com/channels/1/2/3?pinbot=a%20b", ""},
		5: {"https://discord.com/channels/1/2/3?pinbot=", ""},
		6: {"", ""},
		7: {"://bad", ""},
		8: {"https://discord.com/?x=%zz&pinbot=ok", "ok"},
	} {
		if got := pinterest.MarkOf(tt.link); got != tt.want {
			t.Errorf("step %d: MarkOf(%q) = %q, want %q", i, tt.link, got, tt.want)
		}
	}
}

// TestMarkDropped: a pin whose answer comes back without its mark is
// made (no error) but has no Mark, and a warning says that lookups
// cannot find it; a created_at without a zone reads as UTC.
func TestMarkDropped(t *testing.T) {
	var sent struct {
		Link string `json:"link"`
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&sent)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"5","board_id":"b1","link":"https://discord.com/channels/1/2/3","created_at":"2030-01-02T03:04:05"}`))
	}))
	t.Cleanup(hs.Close)
	logs := &logtest.Buffer{}
	c, err := pinterest.New(pinterest.Config{ClientID: "id", ClientSecret: "secret", RedirectURL: redirectURL, APIBase: hs.URL + "/v5",
		Logger: zerolog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := pinterest.NewSession(&oauth2.Token{AccessToken: "a"}, (&tokenStore{}).save)
	if err != nil {
		t.Fatal(err)
	}
	req := pinterest.PinRequest{BoardID: "b1", ImageURL: "https://cdn.example/a.png", Link: "https://discord.com/channels/1/2/3", Mark: "m1"}
	pin, err := c.CreatePin(t.Context(), s, req)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Link != "https://discord.com/channels/1/2/3?pinbot=m1" {
		t.Errorf("sent link %q", sent.Link)
	}
	if pin.Mark != "" || !pin.CreatedAt.Equal(t0.Truncate(time.Second)) || pin.CreatedAt.Location() != time.UTC {
		t.Errorf("pin = %+v; want no mark, created at %v UTC", pin, t0)
	}
	if !strings.Contains(logs.String(), "without its mark") {
		t.Errorf("no warning in logs: %s", logs.String())
	}
}
