package record

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// TestStoredForm: each record encodes to the bytes the stores have
// always written, and those bytes decode back to it.
func TestStoredForm(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		want string
		into Record
	}{
		{"user", &User{V: 1, Active: "a1", Accounts: []string{"a1", "a2"}, QueueWhenFull: true},
			`{"v":1,"active":"a1","accounts":["a1","a2"],"queue_when_full":true}`, &User{}},
		{"account", &Account{V: 1, Username: "n", DefaultBoard: "b1", DefaultBoardName: "B", RelinkNeeded: true, Users: []string{"u1"}},
			`{"v":1,"username":"n","default_board":"b1","default_board_name":"B","relink_needed":true,"users":["u1"]}`, &Account{}},
		{"token", NewToken(&oauth2.Token{AccessToken: "x", RefreshToken: "y", TokenType: "bearer", Expiry: t0}, 3),
			`{"v":1,"access_token":"x","refresh_token":"y","token_type":"bearer","expiry":"2030-01-02T03:04:05Z","gen":3}`, &Token{}},
		{"token of no generation", &Token{V: 1, AccessToken: "x"}, `{"v":1,"access_token":"x"}`, &Token{}},
		{"state", &State{V: 1, User: "u1", Expires: t0, Interaction: "i", At: t0},
			`{"v":1,"user":"u1","expires":"2030-01-02T03:04:05Z","interaction":"i","at":"2030-01-02T03:04:05Z"}`, &State{}},
		{"history", NewHistory(links.PinnedPicture{Key: "k", PinURL: "https://p/1", Until: t0}),
			`{"v":1,"url":"https://p/1","u":1893553445000}`, &History{}},
		{"outbox", &Outbox{V: 1, User: 7, Channel: 9, Text: "hi"}, `{"v":1,"user":"7","channel":"9","text":"hi"}`, &Outbox{}},
		{"observed", &Observed{V: 1, Pins: []ObservedItem{{ID: "p1", Created: 1, Until: 2}}},
			`{"v":1,"pins":[{"id":"p1","c":1,"u":2}]}`, &Observed{}},
	}
	for _, tt := range tests {
		got, err := Encode(tt.rec)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: Encode = %s, %v want %s", tt.name, got, err, tt.want)
			continue
		}
		if err := Decode(got, tt.into); err != nil {
			t.Errorf("%s: Decode: %v", tt.name, err)
			continue
		}
		if again, _ := Encode(tt.into); string(again) != tt.want {
			t.Errorf("%s: decoded and encoded again = %s want %s", tt.name, again, tt.want)
		}
	}
}

// TestDecodeRefuses: a value of another version, or whose fields
// contradict each other, does not decode.
func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		v    string
		rec  Record
		want string
	}{
		{`{"v":2,"accounts":[]}`, &User{}, "version 2, want 1"},
		{`{"v":1,"active":"a9","accounts":["a1"]}`, &User{}, "not linked"},
		{`{"v":1,"accounts":["a1"]}`, &User{}, "no active account"},
		{`{"v":1,"username":"x","users":[]}`, &Account{}, "no linking user"},
		{`{"v":1}`, &Token{}, "neither"},
		{`{"v":1,"user":""}`, &State{}, "user id"},
		{`{"v":1,"u":5}`, &History{}, "no pin address"},
		{`{"v":1,"user":"1"}`, &Outbox{}, "no text"},
		{`{"v":1,"pins":[{"id":""}]}`, &Observed{}, "pin id"},
		{`garbage`, &User{}, "invalid character"},
	}
	for i, tt := range tests {
		if err := Decode([]byte(tt.v), tt.rec); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("step %d: Decode(%s) = %v want an error containing %q", i, tt.v, err, tt.want)
		}
	}
	if err := Corrupt("u/u1", errors.New("x")); !errors.Is(err, links.ErrCorrupt) || !strings.Contains(err.Error(), `"u/u1"`) {
		t.Errorf("Corrupt = %v", err)
	}
}

// TestUserLinkUnlink: linking adds and activates; unlinking the active
// account activates the one linked after it, else the one before.
func TestUserLinkUnlink(t *testing.T) {
	var u User
	for _, a := range []string{"a1", "a2", "a3"} {
		if err := u.Link("u1", a); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Link("u1", "a1"); err != nil || u.Active != "a1" || len(u.Accounts) != 3 {
		t.Fatalf("relink a1: %v, %+v", err, u)
	}
	steps := []struct {
		before, unlink, active string
		left                   []string
	}{
		{"a2", "a2", "a3", []string{"a1", "a3"}},
		{"a3", "a3", "a1", []string{"a1"}},
		{"a1", "a1", "", nil},
	}
	for i, st := range steps {
		u.Active = st.before
		if err := u.Unlink("u1", st.unlink); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if u.Active != st.active || !slices.Equal(u.Accounts, st.left) {
			t.Errorf("step %d: active %q accounts %v want %q %v", i, u.Active, u.Accounts, st.active, st.left)
		}
	}
	if err := u.Unlink("u1", "a9"); !errors.Is(err, links.ErrNotLinked) {
		t.Errorf("unlink again = %v want ErrNotLinked", err)
	}
	full := User{Active: "x0"}
	for i := range links.MaxAccountsPerUser {
		full.Accounts = append(full.Accounts, "x"+string(rune('a'+i)))
	}
	if err := full.Link("u1", "new"); !errors.Is(err, links.ErrTooManyAccounts) || slices.Contains(full.Accounts, "new") {
		t.Errorf("link beyond the bound = %v, %v", err, full.Accounts)
	}
}

// TestAccountLink: a new link keeps an existing default board, clears
// RelinkNeeded and adds its user once.
func TestAccountLink(t *testing.T) {
	a := Account{DefaultBoard: "b1", DefaultBoardName: "One", RelinkNeeded: true, Users: []string{"u1"}}
	a.Link("u2", links.Account{ID: "a1", Username: "n", DefaultBoard: "b2", DefaultBoardName: "Two"})
	a.Link("u2", links.Account{ID: "a1", Username: "m"})
	want := Account{V: Version, Username: "m", DefaultBoard: "b1", DefaultBoardName: "One", Users: []string{"u1", "u2"}}
	if !slices.Equal(a.Users, want.Users) || a.V != want.V || a.Username != want.Username ||
		a.DefaultBoard != want.DefaultBoard || a.RelinkNeeded {
		t.Errorf("got %+v want %+v", a, want)
	}
	if a.Unlink("u1") != true || a.Unlink("u2") != false {
		t.Errorf("Unlink: users left %v", a.Users)
	}
}

// TestObservedMark: Mark keeps a pin's later Until, forgets what ends at
// or before now, bounds the record to the latest, and says whether
// anything changed.
func TestObservedMark(t *testing.T) {
	ms := func(d time.Duration) time.Time { return t0.Add(d * time.Millisecond) }
	pin := func(id string, until time.Duration) links.ObservedPin {
		return links.ObservedPin{ID: id, CreatedAt: t0, Until: ms(until)}
	}
	var r Observed
	steps := []struct {
		pins    []links.ObservedPin
		now     time.Duration
		changed bool
		want    []string // ids, latest Until first
	}{
		{[]links.ObservedPin{pin("p1", 10), pin("p2", 20)}, 0, true, []string{"p2", "p1"}},
		{[]links.ObservedPin{pin("p1", 5)}, 0, false, []string{"p2", "p1"}},
		{[]links.ObservedPin{pin("p1", 30)}, 0, true, []string{"p1", "p2"}},
		{[]links.ObservedPin{pin("p1", 30)}, 0, false, []string{"p1", "p2"}},
		{nil, 20, true, []string{"p1"}},
		{nil, 20, false, []string{"p1"}},
		{nil, 30, true, nil},
	}
	for i, st := range steps {
		if got := r.Mark(st.pins, ms(st.now)); got != st.changed {
			t.Errorf("step %d: changed = %v want %v", i, got, st.changed)
		}
		var ids []string
		for _, p := range r.Pins {
			ids = append(ids, p.ID)
		}
		if !slices.Equal(ids, st.want) {
			t.Errorf("step %d: pins %v want %v", i, ids, st.want)
		}
	}
	var many []links.ObservedPin
	for i := range links.MaxObservedPerAccount + 1 {
		many = append(many, pin("m"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26)), time.Duration(i+1)))
	}
	r = Observed{}
	r.Mark(many, t0)
	if len(r.Pins) != links.MaxObservedPerAccount || r.Pins[len(r.Pins)-1].Until != ms(2).UnixMilli() {
		t.Errorf("bounded to %d pins, earliest until %d", len(r.Pins), r.Pins[len(r.Pins)-1].Until)
	}
	if d := r.Remaining(t0); d != time.Duration(links.MaxObservedPerAccount+1)*time.Millisecond {
		t.Errorf("Remaining = %v", d)
	}
	if got := (&Observed{Pins: []ObservedItem{{ID: "p1"}}}).Unobserved([]string{"p2", "p1", "p2", "p3"}); !slices.Equal(got, []string{"p2", "p3"}) {
		t.Errorf("Unobserved = %v", got)
	}
}

// TestOutboxKey: a key reads back as itself; malformed ones do not.
func TestOutboxKey(t *testing.T) {
	k := digest.Key{Account: "a1", Job: 42}
	key := OutboxKey(k)
	if key != "o/a1/00000000000000000042" {
		t.Fatalf("OutboxKey = %q", key)
	}
	if got, err := ParseOutboxKey(key[len(OutboxPrefix):]); err != nil || got != k {
		t.Errorf("ParseOutboxKey = %v, %v", got, err)
	}
	for _, id := range []string{"a1", "a1/0", "a1/x", "/1"} {
		if _, err := ParseOutboxKey(id); err == nil {
			t.Errorf("ParseOutboxKey(%q) succeeded", id)
		}
	}
	if _, err := NewOutbox(digest.Line{Key: digest.Key{Account: "a1"}, User: 1, Text: "x"}); !errors.Is(err, links.ErrInvalid) {
		t.Errorf("job 0: %v", err)
	}
	if _, err := NewOutbox(digest.Line{Key: k, User: 1, Text: strings.Repeat("x", links.MaxOutboxLineLen+1)}); !errors.Is(err, links.ErrInvalid) {
		t.Errorf("long text: %v", err)
	}
}

// TestState: a new state is well formed, stored by its digest, and
// consumed before its expiry only.
func TestState(t *testing.T) {
	st, rec, err := NewState(links.Request{User: "u1", Interaction: "i", At: t0}, t0.Add(time.Minute))
	if err != nil || !WellFormedState(st) || WellFormedState(st[1:]) {
		t.Fatalf("NewState = %q, %v", st, err)
	}
	if k := StateKey(StateHash(st)); len(k) != len(StatePrefix)+64 || strings.Contains(k, st) {
		t.Errorf("StateKey = %q", k)
	}
	if req, err := rec.Consume(t0.Add(time.Minute)); err != nil || req != (links.Request{User: "u1", Interaction: "i", At: t0}) {
		t.Errorf("Consume at expiry = %+v, %v", req, err)
	}
	if _, err := rec.Consume(t0.Add(time.Minute + time.Millisecond)); !errors.Is(err, links.ErrStateExpired) {
		t.Errorf("Consume after expiry = %v", err)
	}
	if _, _, err := NewState(links.Request{}, t0); err == nil {
		t.Error("NewState with no user succeeded")
	}
}
