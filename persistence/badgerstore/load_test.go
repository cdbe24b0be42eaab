package badgerstore

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pinbot/pinbot/persistence"
	"github.com/pinbot/pinbot/persistence/codec"
)

func TestBadgerCorruptAccount(t *testing.T) {
	good := &persistence.Batch{Accounts: []persistence.AccountWrite{
		{Account: "123", Events: []persistence.Event{reserve(4, 1, t1), reserve(5, 2, t2)}, Snapshot: &persistence.Snapshot{Seq: 3, NextID: 1}},
		{Account: "456", Events: []persistence.Event{reserve(1, 1, t1)}, Snapshot: &persistence.Snapshot{Seq: 0, NextID: 1}},
	}}
	tests := []struct {
		name    string
		key     []byte
		value   []byte
		message string
	}{
		{"garbage snapshot", appendSnapshotKey(nil, "123"), []byte("garbage!"),
			`badgerstore: account "123": snapshot: corrupt state`},
		{"event as snapshot", appendSnapshotKey(nil, "123"), codec.AppendEvent(nil, reserve(1, 1, t0)),
			`badgerstore: account "123": snapshot: corrupt state: unknown format byte`},
		{"empty value", appendSnapshotKey(nil, "123"), nil,
			`badgerstore: account "123": snapshot: corrupt state: value too short`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore(t)
			mustWrite(t, s, good)
			rawSet(t, s, tt.key, tt.value)

			_, err := s.Load(t.Context(), "123")
			if !errors.Is(err, persistence.ErrCorrupt) || !strings.HasPrefix(err.Error(), tt.message) {
				t.Errorf("Load(123) = %v, want ErrCorrupt starting %q", err, tt.message)
			}
			checkLoaded(t, s, "456", persistence.Loaded{Snapshot: persistence.Snapshot{NextID: 1}, Events: []persistence.Event{reserve(1, 1, t1)}})
			if got := accounts(t, s); !slices.Equal(got, []string{"123", "456"}) {
				t.Errorf("Accounts = %q, want [123 456]", got)
			}
		})
	}
}

// TestBadgerLoadConsistentWithWrites: Load runs while snapshots replace
// events; it must always see either the events or the snapshot that
// covers them, never neither.
func TestBadgerLoadConsistentWithWrites(t *testing.T) {
	s := newTestStore(t)
	const acct = "busy"
	done := make(chan struct{})
	go func() {
		defer close(done)
		for seq := uint64(1); seq <= 400; seq++ {
			aw := persistence.AccountWrite{Account: acct, Events: []persistence.Event{commit(seq, seq, t0+int64(seq))}}
			if seq%3 == 0 {
				committed := make([]int64, 0, seq)
				for i := uint64(1); i <= seq; i++ {
					committed = append(committed, t0+int64(i))
				}
				aw.Snapshot = &persistence.Snapshot{Seq: seq, NextID: seq + 1, Committed: committed}
			}
			if err := s.Write(t.Context(), &persistence.Batch{Accounts: []persistence.AccountWrite{aw}}); err != nil {
				t.Errorf("Write seq %d: %v", seq, err)
				return
			}
		}
	}()
	last := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		l := mustLoad(t, s, acct)
		n := len(l.Snapshot.Committed) + len(l.Events)
		if uint64(n) != max(l.Snapshot.Seq, lastSeq(l.Events)) {
			t.Fatalf("Load saw %d pins for seq %d: snapshot %d + %d events", n, max(l.Snapshot.Seq, lastSeq(l.Events)), l.Snapshot.Seq, len(l.Events))
		}
		if n < last {
			t.Fatalf("Load went back from %d to %d pins", last, n)
		}
		last = n
	}
	if last != 400 {
		t.Errorf("last Load saw %d pins, want 400", last)
	}
}

func lastSeq(evs []persistence.Event) uint64 {
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}
