package badgerlinks

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/bot/digest"
	"github.com/pinbot/pinbot/bot/links"
)

// TestOutboxCorruptRecords: Lines skips the records it cannot read,
// hands out the others, and names each bad key in an error wrapping
// links.ErrCorrupt.
func TestOutboxCorruptRecords(t *testing.T) {
	ctx := context.Background()
	s := memStore(t)
	good := digest.Line{Key: digest.Key{Account: "acct", Job: 5}, User: 1, Text: "✅"}
	if _, err := s.Outbox().Put(ctx, good); err != nil {
		t.Fatal(err)
	}
	rawSet(t, s, "o/acct/00000000000000000001", "{")
	rawSet(t, s, "o/acct/00000000000000000009", `{"v":1,"user":"1"}`)
	rawSet(t, s, "o/acct", `{"v":1,"user":"1","text":"x"}`)
	var got []digest.Line
	err := s.Outbox().Lines(ctx, func(l digest.Line) error {
		got = append(got, l)
		return nil
	})
	if len(got) != 1 || got[0] != good {
		t.Errorf("lines %+v, want the good one", got)
	}
	if !errors.Is(err, links.ErrCorrupt) {
		t.Fatalf("Lines = %v, want links.ErrCorrupt", err)
	}
	for _, want := range []string{`"o/acct/00000000000000000001"`, `"o/acct/00000000000000000009": no text`, `"o/acct": no job ID`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
