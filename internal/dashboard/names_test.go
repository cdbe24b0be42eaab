package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/actors"
	"github.com/pinbot/pinbot/persistence/persistencetest"
)

// fixtureNames names two of the fixture's accounts, as the token store
// would; the others nobody links.
func fixtureNames(_ context.Context, account string) (Name, error) {
	switch account {
	case "acct-alice-art":
		return Name{Username: "alice_art", LinkedBy: []string{"801"}}, nil
	case "acct-bob-photos":
		return Name{Username: "bob_photos", LinkedBy: []string{"802", "803"}}, nil
	}
	return Name{}, nil
}

// TestNames: the accounts show their Pinterest usernames and the Discord
// users who linked them, in both lists and in the JSON; an account whose
// name cannot be read shows its ID alone, and the page says so.
func TestNames(t *testing.T) {
	f := newFixture(t)
	names := func(ctx context.Context, account string) (Name, error) {
		if account == "acct-carol" {
			return Name{}, errors.New("token store closed")
		}
		return fixtureNames(ctx, account)
	}
	d, err := New(Config{Token: []byte(testToken), Engine: f.eng, Names: names, Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	html := body(t, get(t, d.Mount(http404()), "GET", Path, "Bearer "+testToken))
	for _, w := range []string{
		`<td class="account"><span class="username">@alice_art</span> <span class="id">acct-alice-art</span><span class="linkers">linked by Discord user 801</span></td>`,
		`<td class="account"><span class="id">acct-carol</span></td>`,
		"Some accounts show their ID alone: their names could not be read (see the log).",
	} {
		if !strings.Contains(html, w) {
			t.Errorf("the page lacks %s", w)
		}
	}
	// bob's account is in both lists.
	if n := strings.Count(html, `<span class="username">@bob_photos</span> <span class="id">acct-bob-photos</span><span class="linkers">linked by Discord users 802, 803</span>`); n != 2 {
		t.Errorf("bob's account is named %d times, want 2 (the busiest and the queue)", n)
	}
	data := d.Data(context.Background())
	if a := data.Queue[0]; a.Username != "bob_photos" || len(a.LinkedBy) != 2 {
		t.Errorf("queue's account %+v", a)
	}
}

// TestEarlierRules: when a limit in force before a change, or the hold
// after a restore, still refuses slots the current limit leaves free,
// the page counts them as held, gives only the slots /pin may take as
// free, and says which rule holds them and until when.
func TestEarlierRules(t *testing.T) {
	ctx := context.Background()
	clock := actors.NewManualClock(monday)
	store := persistencetest.NewMemStore(clock.Now)
	cfg := actors.DefaultConfig()
	cfg.Clock, cfg.Wall, cfg.Recover, cfg.Limit = clock, clock.Now, false, 5
	start := func() *actors.Engine {
		t.Helper()
		eng, err := actors.New(cfg, store, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close(context.Background()) })
		return eng
	}
	eng := start()
	f := &fixture{clock: clock, eng: eng}
	f.pin(t, "acct", 3)
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	cfg.Limit = 10
	eng = start()
	page := func() string {
		t.Helper()
		d, err := New(Config{Token: []byte(testToken), Engine: eng, Rules: store, Now: f.now})
		if err != nil {
			t.Fatal(err)
		}
		return body(t, get(t, d.Mount(http404()), "GET", Path, "Bearer "+testToken))
	}
	html := page()
	for _, w := range []string{
		"An earlier rule still counts the pins made under it: /pin refuses the slots it holds, shown as held below.",
		"<strong>5 pins per 12h</strong> until <strong>Tue 01:05:00 UTC</strong> <span class=\"note\">in 12h 05m</span>: the limit and window before they were changed.",
		`<span class="ratio">3/10</span></span> <span class="note held">+5 held by an earlier rule</span>`,
		`<span class="freenow">2 free now</span>`,
	} {
		if !strings.Contains(html, w) {
			t.Errorf("after the limit was raised, the page lacks %s\n%s", w, html)
		}
	}

	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if _, err := actors.AfterRestore(t.Context(), cfg, store, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	eng = start()
	html = page()
	for _, w := range []string{
		"No pin until <strong>Tue 02:05:00 UTC</strong> <span class=\"note\">in 12h 05m</span>: the hold after the restore of a backup, whose later pins are unknown, for the accounts not yet rebuilt from Pinterest's listing of their pins since the restore at 14:00:00 UTC.",
		`<span class="note held">+7 held by an earlier rule</span>`,
	} {
		if !strings.Contains(html, w) {
			t.Errorf("after a restore, the page lacks %s\n%s", w, html)
		}
	}
	if strings.Contains(html, "2 free now") {
		t.Error("after a restore, the page shows free slots")
	}
}

// heldReader is a fixed list of accounts held after a restore.
type heldReader []HeldAccount

func (h heldReader) Held() []HeldAccount { return h }

// TestHeldAccounts: the linked accounts that stay held after a restore,
// their listing unread, are named on the page and in the JSON, each with
// why, since when, the next try and the hold's end.
func TestHeldAccounts(t *testing.T) {
	f := newFixture(t)
	at := f.eng.Now()
	held := heldReader{{Account: "acct-alice-art", Username: "old_name", Reason: "Pinterest refused its access token",
		Since: at.Add(-time.Minute), Retry: at.Add(4 * time.Minute), Until: at.Add(12 * time.Hour)}}
	d, err := New(Config{Token: []byte(testToken), Engine: f.eng, Names: fixtureNames, Held: held, Now: f.now})
	if err != nil {
		t.Fatal(err)
	}
	html := body(t, get(t, d.Mount(http404()), "GET", Path, "Bearer "+testToken))
	for _, w := range []string{
		`<h2>Accounts held after the restore</h2>`,
		"Pinterest's listing of this account's pins could not be read",
		`<tr><td class="account"><span class="username">@alice_art</span> <span class="id">acct-alice-art</span><span class="linkers">linked by Discord user 801</span></td><td class="reason">Pinterest refused its access token</td>`,
		`<td>16:34:00 UTC <span class="note">in 4 min</span></td>`,
	} {
		if !strings.Contains(html, w) {
			t.Errorf("the page lacks %s\n%s", w, html)
		}
	}
	data := d.Data(context.Background())
	if len(data.Held) != 1 || data.Held[0].Username != "alice_art" || data.Held[0].Reason == "" {
		t.Errorf("Data.Held = %+v", data.Held)
	}
	var got struct {
		Held []HeldAccount `json:"held_accounts"`
	}
	js := body(t, get(t, d.Mount(http404()), "GET", DataPath, "Bearer "+testToken))
	if err := json.Unmarshal([]byte(js), &got); err != nil || len(got.Held) != 1 || got.Held[0].Account != "acct-alice-art" ||
		got.Held[0].Username != "alice_art" || got.Held[0].Reason != held[0].Reason || !got.Held[0].Retry.Equal(held[0].Retry) {
		t.Errorf("the JSON's held accounts: %+v, %v\n%s", got.Held, err, js)
	}

	// Without a reader, or with nothing held, no such section.
	for _, r := range []HeldReader{nil, heldReader(nil)} {
		d, err := New(Config{Token: []byte(testToken), Engine: f.eng, Held: r, Now: f.now})
		if err != nil {
			t.Fatal(err)
		}
		if html := body(t, get(t, d.Mount(http404()), "GET", Path, "Bearer "+testToken)); strings.Contains(html, `id="held"`) {
			t.Errorf("a held section with %v", r)
		}
	}
}
