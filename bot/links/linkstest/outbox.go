package linkstest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
)

// OutboxLines returns every line the outbox holds.
func OutboxLines(t *testing.T, o digest.Outbox) []digest.Line {
	t.Helper()
	var out []digest.Line
	if err := o.Lines(context.Background(), func(l digest.Line) error {
		out = append(out, l)
		return nil
	}); err != nil {
		t.Fatalf("Lines: %v", err)
	}
	return out
}

// Line is a digest line of job on account, with text, for a fixed user
// and channel.
func Line(account string, job uint64, text string) digest.Line {
	return digest.Line{Key: digest.Key{Account: account, Job: job}, User: 1001, Guild: 2002, Channel: 3003, Text: text}
}

// testOutboxKeepsFirst: a Put for a key already stored keeps and returns
// the first line.
func testOutboxKeepsFirst(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	o := open(t).Outbox()
	first, second := Line("acct", 7, "✅ pinned"), Line("acct", 7, "❔ may exist")
	if got, err := o.Put(ctx, first); err != nil || got != first {
		t.Fatalf("Put(first) = %+v, %v", got, err)
	}
	if got, err := o.Put(ctx, second); err != nil || got != first {
		t.Fatalf("Put(second) = %+v, %v; want the first", got, err)
	}
	if got := OutboxLines(t, o); !slices.Equal(got, []digest.Line{first}) {
		t.Fatalf("Lines = %+v, want the first only", got)
	}
}

// testOutboxDeleteMany: Delete removes more keys than one transaction
// takes.
func testOutboxDeleteMany(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	o := open(t).Outbox()
	var keys []digest.Key
	for i := range 2500 {
		l := Line("acct", uint64(i+1), "pinned")
		if _, err := o.Put(ctx, l); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, l.Key)
	}
	if err := o.Delete(ctx, keys); err != nil {
		t.Fatal(err)
	}
	if got := OutboxLines(t, o); len(got) != 0 {
		t.Fatalf("%d lines left", len(got))
	}
}

// testOutboxRefusesBadLines: what cannot be stored fails with ErrInvalid,
// naming the fault, and nothing is stored.
func testOutboxRefusesBadLines(t *testing.T, open func(*testing.T) links.Store) {
	ctx := context.Background()
	o := open(t).Outbox()
	steps := []struct {
		l    digest.Line
		want string
	}{
		{Line("", 1, "x"), "account id is empty"},
		{Line("a/b", 1, "x"), "account id"},
		{Line("acct", 0, "x"), "job ID is 0"},
		{digest.Line{Key: digest.Key{Account: "acct", Job: 1}, Text: "x"}, "no user"},
		{Line("acct", 1, ""), "no text"},
		{Line("acct", 1, strings.Repeat("x", links.MaxOutboxLineLen+1)), "more than"},
		{Line("acct", 1, "bad \xff"), "UTF-8"},
	}
	for i, st := range steps {
		_, err := o.Put(ctx, st.l)
		if !errors.Is(err, links.ErrInvalid) || !strings.Contains(err.Error(), st.want) {
			t.Errorf("step %d: Put = %v, want ErrInvalid saying %q", i, err, st.want)
		}
	}
	if err := o.Delete(ctx, []digest.Key{{Account: "", Job: 1}}); !errors.Is(err, links.ErrInvalid) {
		t.Errorf("Delete of an invalid key = %v, want ErrInvalid", err)
	}
	if got := OutboxLines(t, o); len(got) != 0 {
		t.Errorf("stored %+v", got)
	}
}
