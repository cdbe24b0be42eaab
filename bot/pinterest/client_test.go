package pinterest_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pinbot/pinbot/bot/pinterest"
	"github.com/pinbot/pinbot/bot/pinterest/pinteresttest"
)

func TestCreatePin(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(2)...)
	e.clk.Advance(time.Hour)

	pin, err := e.c.CreatePin(t.Context(), s, pinReq)
	if err != nil {
		t.Fatalf("CreatePin: %v", err)
	}
	pins := e.srv.PinsFor("1001")
	if len(pins) != 1 {
		t.Fatalf("server has %d pins, want 1", len(pins))
	}
	got := pins[0]
	want := pinteresttest.Pin{
		ID: pin.ID, AccountID: "1001", BoardID: pinReq.BoardID, ImageURL: pinReq.ImageURL,
		Link: pinReq.Link, Title: pinReq.Title, Description: pinReq.Description, AltText: pinReq.AltText,
		CreatedAt: t0.Add(time.Hour),
	}
	if got != want {
		t.Errorf("server pin = %+v\nwant %+v", got, want)
	}
	if pin.URL != "https://www.pinterest.com/pin/"+pin.ID+"/" {
		t.Errorf("URL = %q", pin.URL)
	}
	if !pin.CreatedAt.Equal(t0.Add(time.Hour)) || pin.BoardID != "b1" || pin.Title != "A cat" {
		t.Errorf("Pin = %+v", pin)
	}
}

func TestCreatePinValidatesBeforeSending(t *testing.T) {
	long := strings.Repeat("é", 101)
	tests := []struct {
		name  string
		req   pinterest.PinRequest
		field string
	}{
		{"no board", pinterest.PinRequest{ImageURL: "https://x.example/a.png"}, "BoardID"},
		{"no image", pinterest.PinRequest{BoardID: "b1"}, "ImageURL"},
		{"relative image", pinterest.PinRequest{BoardID: "b1", ImageURL: "/a.png"}, "ImageURL"},
		{"long title", pinterest.PinRequest{BoardID: "b1", ImageURL: "https://x.example/a.png", Title: long}, "Title"},
		{"bad link", pinterest.PinRequest{BoardID: "b1", ImageURL: "https://x.example/a.png", Link: "javascript:alert(1)"}, "Link"},
	}
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(1)...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.c.CreatePin(t.Context(), s, tt.req)
			if err == nil || !strings.Contains(err.Error(), "PinRequest."+tt.field) {
				t.Errorf("err = %v, want one naming PinRequest.%s", err, tt.field)
			}
		})
	}
	wantCount(t, e.srv, "", "", 0)
}

func TestCreatePinCanceledBeforeSending(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(1)...)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := e.c.CreatePin(ctx, s, pinReq)
	if !errors.Is(err, context.Canceled) || errors.Is(err, pinterest.ErrOutcomeUnknown) {
		t.Errorf("err = %v, want context.Canceled and not ErrOutcomeUnknown", err)
	}
	wantCount(t, e.srv, "", "", 0)
}

func TestRateLimited(t *testing.T) {
	tests := []struct {
		name       string
		reset      string
		retryAfter int // 0: header absent
		want       time.Duration
	}{
		{"seconds until reset", "30", 0, 30 * time.Second},
		{"fractional seconds", "1.5", 0, 1500 * time.Millisecond},
		{"unix seconds", strconv.FormatInt(t0.Add(2*time.Minute).Unix(), 10), 0, 2 * time.Minute},
		{"unix milliseconds", strconv.FormatInt(t0.Add(3*time.Minute).UnixMilli(), 10), 0, 3 * time.Minute},
		{"garbage", "soon", 0, pinterest.DefaultRateLimitWait},
		{"missing", "", 0, pinterest.DefaultRateLimitWait},
		{"negative", "-5", 0, pinterest.DefaultRateLimitWait},
		{"unix time in the past", strconv.FormatInt(t0.Add(-time.Hour).Unix(), 10), 0, pinterest.DefaultRateLimitWait},
		{"retry-after alone", "", 90, 90 * time.Second},
		{"later of both", "30", 90, 90 * time.Second},
		{"absurd reset capped", "999999999", 0, pinterest.MaxRateLimitWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			_, s, _ := e.account(t, "1001", boards(1)...)
			f := pinteresttest.RateLimited(pinteresttest.PathPins, tt.reset)
			if tt.retryAfter != 0 {
				f = pinteresttest.RetryAfter(f, tt.retryAfter)
			}
			e.srv.Inject(f)

			_, err := e.c.CreatePin(t.Context(), s, pinReq)
			if !errors.Is(err, pinterest.ErrRateLimited) || errors.Is(err, pinterest.ErrSpamBlocked) {
				t.Fatalf("err = %v, want ErrRateLimited and not ErrSpamBlocked", err)
			}
			var rl *pinterest.RateLimitError
			if !errors.As(err, &rl) {
				t.Fatalf("err is not a *RateLimitError")
			}
			if !rl.ResetAt.Equal(t0.Add(tt.want)) || rl.Wait != tt.want {
				t.Errorf("ResetAt = %v, Wait = %v; want %v, %v", rl.ResetAt, rl.Wait, t0.Add(tt.want), tt.want)
			}
			var ae *pinterest.APIError
			if !errors.As(err, &ae) || ae.Status != 429 || ae.Code != pinteresttest.CodeRateLimited || ae.RequestID == "" {
				t.Errorf("APIError = %+v, want 429, code 8, a rid", ae)
			}
			wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 1)
			if n := len(e.srv.Pins()); n != 0 {
				t.Errorf("%d pins created, want 0", n)
			}
		})
	}
}

func TestSpamBlocked(t *testing.T) {
	tests := []struct {
		name      string
		fault     pinteresttest.Fault
		spamCodes []int
		want      time.Duration
	}{
		{"message mentions spam", pinteresttest.SpamBlocked(pinteresttest.PathPins), nil, pinterest.DefaultSpamWait},
		{"spam with reset header", pinteresttest.RetryAfter(pinteresttest.SpamBlocked(pinteresttest.PathPins), 600), nil, 10 * time.Minute},
		{"configured code", pinteresttest.Fault{Path: pinteresttest.PathPins, Status: 429, Code: 77, Message: "Blocked."}, []int{77}, pinterest.DefaultSpamWait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *pinterest.Config) { c.SpamCodes = tt.spamCodes })
			_, s, _ := e.account(t, "1001", boards(1)...)
			e.srv.Inject(tt.fault)
			_, err := e.c.CreatePin(t.Context(), s, pinReq)
			if !errors.Is(err, pinterest.ErrSpamBlocked) || !errors.Is(err, pinterest.ErrRateLimited) {
				t.Fatalf("err = %v, want ErrSpamBlocked and ErrRateLimited", err)
			}
			var rl *pinterest.RateLimitError
			if !errors.As(err, &rl) || !rl.Spam || rl.Wait != tt.want {
				t.Errorf("RateLimitError = %+v, want Spam and Wait %v", rl, tt.want)
			}
		})
	}
}

func TestImageRejected(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(1)...)
	const (
		unfetchable = "https://cdn.example/gone.png"
		invalid     = "https://cdn.example/not-an-image.txt"
	)
	e.srv.RejectImage(unfetchable, pinteresttest.CodeImageFetchFailed)
	e.srv.RejectImage(invalid, pinteresttest.CodeImageInvalid)

	for _, tt := range []struct {
		url  string
		code int
	}{{unfetchable, 233}, {invalid, 235}} {
		req := pinReq
		req.ImageURL = tt.url
		_, err := e.c.CreatePin(t.Context(), s, req)
		if !errors.Is(err, pinterest.ErrImageRejected) || errors.Is(err, pinterest.ErrOutcomeUnknown) {
			t.Errorf("%s: err = %v, want ErrImageRejected only", tt.url, err)
		}
		var ae *pinterest.APIError
		if !errors.As(err, &ae) || ae.Status != 403 || ae.Code != tt.code {
			t.Errorf("%s: APIError = %+v, want 403 code %d", tt.url, ae, tt.code)
		}
	}
	// The next pin goes through.
	if _, err := e.c.CreatePin(t.Context(), s, pinReq); err != nil {
		t.Errorf("CreatePin after rejections: %v", err)
	}
	wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 3)
	if n := len(e.srv.Pins()); n != 1 {
		t.Errorf("%d pins, want 1", n)
	}
}

func TestOtherClientErrors(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "1001", boards(1)...)
	req := pinReq
	req.BoardID = "someone-elses"
	_, err := e.c.CreatePin(t.Context(), s, req)
	var ae *pinterest.APIError
	if !errors.As(err, &ae) || ae.Status != 403 || ae.Code != pinteresttest.CodeNotPermitted {
		t.Fatalf("err = %v, want APIError 403 code 29", err)
	}
	for _, kind := range []error{pinterest.ErrImageRejected, pinterest.ErrOutcomeUnknown, pinterest.ErrRateLimited, pinterest.ErrReauthRequired, pinterest.ErrUnavailable} {
		if errors.Is(err, kind) {
			t.Errorf("err matches %v", kind)
		}
	}
	if !strings.HasPrefix(err.Error(), "pinterest: POST /pins: HTTP 403 code 29") || !strings.Contains(err.Error(), "(rid ") {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestCreatePinOutcomeUnknown(t *testing.T) {
	tests := []struct {
		name     string
		fault    pinteresttest.Fault
		timeout  time.Duration
		wantPins int
		wantErr  error // besides ErrOutcomeUnknown
	}{
		{"500", pinteresttest.ServerError(pinteresttest.PathPins, 500), 0, 0, nil},
		{"503", pinteresttest.ServerError(pinteresttest.PathPins, 503), 0, 0, nil},
		{"created but 502", pinteresttest.CreatedButFailed(502), 0, 1, nil},
		{"hung until timeout", pinteresttest.Hang(pinteresttest.PathPins), 100 * time.Millisecond, 0, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *pinterest.Config) {
				if tt.timeout != 0 {
					c.RequestTimeout = tt.timeout
				}
			})
			_, s, _ := e.account(t, "1001", boards(1)...)
			arrived := make(chan struct{}, 1)
			f := tt.fault
			f.Arrived = arrived
			e.srv.Inject(f)

			done := make(chan error, 1)
			go func() {
				_, err := e.c.CreatePin(t.Context(), s, pinReq)
				done <- err
			}()
			<-arrived
			err := <-done
			if !errors.Is(err, pinterest.ErrOutcomeUnknown) {
				t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want also %v", err, tt.wantErr)
			}
			wantCount(t, e.srv, http.MethodPost, pinteresttest.PathPins, 1)
			if n := len(e.srv.PinsFor("1001")); n != tt.wantPins {
				t.Errorf("server has %d pins, want %d", n, tt.wantPins)
			}
		})
	}
}

// TestGetRetries: a GET is repeated after a 5xx answer or a timeout, up
// to Retry.MaxAttempts tries, then fails with ErrUnavailable.
func TestGetRetries(t *testing.T) {
	tests := []struct {
		name      string
		fault     pinteresttest.Fault
		times     int
		timeout   time.Duration
		wantErr   error
		wantCalls int
	}{
		{"5xx then success", pinteresttest.ServerError(pinteresttest.PathUserAccount, 500), 1, 0, nil, 2},
		{"5xx twice then success", pinteresttest.ServerError(pinteresttest.PathUserAccount, 503), 2, 0, nil, 3},
		{"5xx every time", pinteresttest.ServerError(pinteresttest.PathUserAccount, 503), 3, 0, pinterest.ErrUnavailable, 3},
		{"timeout then success", pinteresttest.Hang(pinteresttest.PathUserAccount), 1, 100 * time.Millisecond, nil, 2},
		{"timeout every time", pinteresttest.Hang(pinteresttest.PathUserAccount), 3, 100 * time.Millisecond, pinterest.ErrUnavailable, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *pinterest.Config) {
				if tt.timeout != 0 {
					c.RequestTimeout = tt.timeout
				}
			})
			_, s, _ := e.account(t, "1001")
			f := tt.fault
			f.Times = tt.times
			e.srv.Inject(f)
			_, err := e.c.UserAccount(t.Context(), s)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("err = %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			// Handlers of hung requests finish when their client gives up;
			// closing the server waits for them, so the count is final.
			e.srv.Close()
			wantCount(t, e.srv, http.MethodGet, pinteresttest.PathUserAccount, tt.wantCalls)
		})
	}
}

func TestListBoards(t *testing.T) {
	tests := []struct {
		name      string
		boards    int
		maxPages  int
		stuck     bool
		wantErr   string
		wantCalls int
	}{
		{"none", 0, 0, false, "", 1},
		{"one page", 250, 0, false, "", 1},
		{"three pages", 600, 0, false, "", 3},
		{"four pages", 751, 0, false, "", 4},
		{"too many pages", 600, 2, false, "more than 2 pages", 2},
		{"repeating bookmark", 600, 0, true, "bookmark repeated", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *pinterest.Config) { c.MaxBoardPages = tt.maxPages })
			_, s, _ := e.account(t, "1001", boards(tt.boards)...)
			if tt.stuck {
				e.srv.Inject(pinteresttest.StuckBookmark())
			}
			got, err := e.c.ListBoards(t.Context(), s)
			wantCount(t, e.srv, http.MethodGet, pinteresttest.PathBoards, tt.wantCalls)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ListBoards: %v", err)
			}
			if len(got) != tt.boards {
				t.Fatalf("got %d boards, want %d", len(got), tt.boards)
			}
			for i, b := range got {
				if want := "b" + strconv.Itoa(i+1); b.ID != want || b.Name != "Board "+want || b.Privacy != "PUBLIC" {
					t.Fatalf("board %d = %+v, want id %s", i, b, want)
				}
			}
		})
	}
}

func TestUserAccount(t *testing.T) {
	e := newEnv(t, nil)
	_, s, _ := e.account(t, "2783136121146311751")
	got, err := e.c.UserAccount(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	want := pinterest.Account{ID: "2783136121146311751", Username: "user2783136121146311751", AccountType: "PINNER"}
	if got != want {
		t.Errorf("UserAccount = %+v, want %+v", got, want)
	}
	e.srv.SetProfileImage("2783136121146311751", "https://i.pinimg.com/75x75_RS/ab/cd/ef/abcdef.jpg")
	if got, err = e.c.UserAccount(t.Context(), s); err != nil || got.ProfileImage != "https://i.pinimg.com/75x75_RS/ab/cd/ef/abcdef.jpg" {
		t.Errorf("UserAccount = %+v, %v; want the profile image", got, err)
	}
}

func TestNoSecretsInLogs(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, nil)
	cred, s, st := e.account(t, "1001", boards(300)...)
	secrets := []string{cred.AccessToken, cred.RefreshToken, cred.Code, e.srv.ClientSecret()}

	// Authorization flow with a second account.
	e.srv.AddAccount("1002", "bob", boards(1)...)
	e.srv.SetLoggedIn("1002")
	code := authorize(t, e, "state-1")
	secrets = append(secrets, code)
	tok, err := e.c.Exchange(ctx, code)
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	secrets = append(secrets, tok.AccessToken, tok.RefreshToken)
	if _, err := e.c.Exchange(ctx, code); err == nil {
		t.Fatalf("reused code accepted")
	}

	// Expiry refresh, 401 refresh, and every error class.
	e.clk.Advance(31 * 24 * time.Hour)
	e.srv.Inject(pinteresttest.ExpiredToken(pinteresttest.PathPins))
	e.srv.Inject(pinteresttest.RateLimited(pinteresttest.PathPins, "30"))
	e.srv.Inject(pinteresttest.SpamBlocked(pinteresttest.PathPins))
	e.srv.Inject(pinteresttest.ServerError(pinteresttest.PathPins, 500))
	e.srv.Inject(pinteresttest.CreatedButFailed(502))
	e.srv.RejectImage("https://cdn.example/bad.png", 233)
	for range 5 {
		_, _ = e.c.CreatePin(ctx, s, pinReq)
	}
	bad := pinReq
	bad.ImageURL = "https://cdn.example/bad.png"
	_, _ = e.c.CreatePin(ctx, s, bad)
	if _, err := e.c.ListBoards(ctx, s); err != nil {
		t.Fatalf("ListBoards: %v", err)
	}
	_, saved := st.snapshot()
	if len(saved) != 2 {
		t.Fatalf("saved %d tokens, want 2 (expiry and 401)", len(saved))
	}
	for _, tk := range saved {
		secrets = append(secrets, tk.AccessToken, tk.RefreshToken)
	}

	logs := e.logs.String()
	for _, sec := range secrets {
		if sec == "" {
			t.Fatalf("empty secret in the list")
		}
		if strings.Contains(logs, sec) {
			t.Errorf("logs contain a secret %.8s…", sec)
		}
	}
	for _, bad := range []string{"Bearer", "Authorization", "Basic "} {
		if strings.Contains(logs, bad) {
			t.Errorf("logs contain %q", bad)
		}
	}
	if !strings.Contains(logs, `"component":"pinterest"`) {
		t.Errorf("logs lack component=pinterest")
	}
	for _, r := range e.srv.Requests() {
		if r.Path == pinteresttest.PathAuthorize {
			continue // fetched by the test, not the Client
		}
		if !strings.Contains(logs, `"rid":"`+r.RequestID+`"`) {
			t.Errorf("logs lack rid %s of %s %s", r.RequestID, r.Method, r.Path)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := pinterest.Config{ClientID: "id", ClientSecret: "secret", RedirectURL: "https://x.example/cb"}
	tests := []struct {
		name  string
		mod   func(*pinterest.Config)
		field string // "" for valid
	}{
		{"valid", func(*pinterest.Config) {}, ""},
		{"sandbox", func(c *pinterest.Config) { c.APIBase = pinterest.SandboxAPIBase }, ""},
		{"no client id", func(c *pinterest.Config) { c.ClientID = "" }, "ClientID"},
		{"no secret", func(c *pinterest.Config) { c.ClientSecret = "" }, "ClientSecret"},
		{"no redirect", func(c *pinterest.Config) { c.RedirectURL = "" }, "RedirectURL"},
		{"relative redirect", func(c *pinterest.Config) { c.RedirectURL = "/cb" }, "RedirectURL"},
		{"bad api base", func(c *pinterest.Config) { c.APIBase = "ftp://x" }, "APIBase"},
		{"bad auth url", func(c *pinterest.Config) { c.AuthURL = "nope" }, "AuthURL"},
		{"scope with comma", func(c *pinterest.Config) { c.Scopes = []string{"a,b"} }, "Scopes"},
		{"negative timeout", func(c *pinterest.Config) { c.RequestTimeout = -1 }, "RequestTimeout"},
		{"negative pages", func(c *pinterest.Config) { c.MaxBoardPages = -1 }, "MaxBoardPages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			if tt.field == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "Config."+tt.field) || !strings.HasPrefix(err.Error(), "pinterest: ") {
				t.Errorf("Validate() = %v, want a pinterest error naming Config.%s", err, tt.field)
			}
			if _, nerr := pinterest.New(c); nerr == nil {
				t.Errorf("New accepted an invalid Config")
			}
		})
	}
}

func TestNewSessionRejectsEmpty(t *testing.T) {
	if _, err := pinterest.NewSession(nil, (&tokenStore{}).save); err == nil {
		t.Errorf("NewSession(nil) succeeded")
	}
	cred := pinteresttest.Credentials{AccessToken: "a"}
	if _, err := pinterest.NewSession(cred.Token(), nil); err == nil {
		t.Errorf("NewSession without saver succeeded")
	}
}
