package badgerlinks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/pinbot/pinbot/bot/links"
)

// rawSet writes value under key, bypassing the Store's encoding.
func rawSet(t *testing.T, s *Store, key, value string) {
	t.Helper()
	err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(key), []byte(value)) })
	if err != nil {
		t.Fatalf("raw set %q: %v", key, err)
	}
}

func memStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open("", Options{InMemory: true}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestCorruptRecords(t *testing.T) {
	ctx := context.Background()
	tok := &oauth2.Token{AccessToken: "x"}
	tests := []struct {
		name, key, value string
		call             func(s *Store) error
		msg              string // besides the key
	}{
		{"user not JSON", "u/u1", "{", func(s *Store) error { _, err := s.User(ctx, "u1"); return err }, "unexpected end"},
		{"user future version", "u/u1", `{"v":2,"accounts":[]}`, func(s *Store) error { _, err := s.User(ctx, "u1"); return err }, "version 2"},
		{"user active not linked", "u/u1", `{"v":1,"active":"a9","accounts":["a1"]}`, func(s *Store) error {
			return s.Link(ctx, "u1", links.Account{ID: "a1"}, tok)
		}, `active account "a9"`},
		{"user lists missing account", "u/u1", `{"v":1,"active":"a1","accounts":["a1"]}`, func(s *Store) error {
			_, err := s.Accounts(ctx, "u1")
			return err
		}, "missing"},
		{"account no users", "a/a1", `{"v":1,"username":"x","users":[]}`, func(s *Store) error {
			_, err := s.Account(ctx, "a1")
			return err
		}, "no linking user"},
		{"token empty", "t/a1", `{"v":1}`, func(s *Store) error { _, err := s.Token(ctx, "a1"); return err }, "neither"},
		{"guild not JSON", "g/g1", "{", func(s *Store) error { _, err := s.GuildSettings(ctx, "g1"); return err }, "unexpected end"},
		{"guild emoji with a space", "g/g1", `{"v":1,"pin_emoji":"a b"}`, func(s *Store) error {
			return s.SetPinEmoji(ctx, "g1", "🖼️")
		}, "pin emoji"},
		{"listing", "a/a1", `[]`, func(s *Store) error {
			return s.AllAccounts(ctx, func(links.Account) error { return nil })
		}, "cannot unmarshal"},
	}
	for _, tt := range tests {
		s := memStore(t)
		rawSet(t, s, tt.key, tt.value)
		err := tt.call(s)
		wantKey := tt.key
		if tt.name == "user lists missing account" {
			wantKey = "a/a1"
		}
		if !errors.Is(err, links.ErrCorrupt) || !strings.Contains(err.Error(), `"`+wantKey+`"`) ||
			!strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: err = %v, want links.ErrCorrupt naming %q and mentioning %q", tt.name, err, wantKey, tt.msg)
		}
	}
}

func TestCorruptStateIsDropped(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := memStore(t)
	a, err := s.NewState(ctx, "u1", t0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.NewState(ctx, "u1", t0)
	if err != nil {
		t.Fatal(err)
	}
	rawSet(t, s, stateKey(a), "garbage")
	rawSet(t, s, stateKey(b), `{"v":1,"user":""}`)

	_, err = s.ConsumeState(ctx, a, t0)
	if !errors.Is(err, links.ErrStateInvalid) || !errors.Is(err, links.ErrCorrupt) {
		t.Fatalf("ConsumeState(corrupt) = %v, want links.ErrStateInvalid and links.ErrCorrupt", err)
	}
	if _, err := s.ConsumeState(ctx, a, t0); !errors.Is(err, links.ErrStateInvalid) || errors.Is(err, links.ErrCorrupt) {
		t.Fatalf("second ConsumeState(corrupt) = %v, want plain ErrStateInvalid (deleted)", err)
	}
	// PurgeStates drops unreadable states whatever the time.
	if n, err := s.PurgeStates(ctx, t0); err != nil || n != 1 {
		t.Fatalf("PurgeStates = %d, %v; want 1 corrupt state deleted", n, err)
	}
}
