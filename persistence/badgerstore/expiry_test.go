package badgerstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/pinbot/pinbot/persistence"
)

func TestBadgerExpiresAt(t *testing.T) {
	s := newTestStore(t)
	now := time.Now().UnixMilli()
	tests := []struct {
		account   string
		expiresAt int64
		want      uint64 // item.ExpiresAt(), Unix seconds
	}{
		{"rounded", now + time.Hour.Milliseconds() + 1, uint64((now+time.Hour.Milliseconds())/1000) + 1},
		{"whole-second", (now/1000 + 7200) * 1000, uint64(now/1000 + 7200)},
		{"never", 0, 0},
	}
	var b persistence.Batch
	b.HighWater = now
	for _, tt := range tests {
		b.Accounts = append(b.Accounts, persistence.AccountWrite{
			Account: tt.account, Events: []persistence.Event{reserve(1, 1, t0), reserve(2, 2, t0)},
			Snapshot: &persistence.Snapshot{Seq: 1, NextID: 2}, ExpiresAt: tt.expiresAt,
		})
	}
	mustWrite(t, s, &b)

	err := s.db.View(func(txn *badger.Txn) error {
		for _, tt := range tests {
			key := appendSnapshotKey(nil, tt.account)
			item, err := txn.Get(key)
			if err != nil {
				return fmt.Errorf("get %q: %w", key, err)
			}
			if got := item.ExpiresAt(); got != tt.want {
				t.Errorf("%q: ExpiresAt = %d, want %d", key, got, tt.want)
			}
		}
		item, err := txn.Get(highWaterKey)
		if err != nil {
			return err
		}
		if item.ExpiresAt() != 0 {
			t.Errorf("high-water key expires at %d, want never", item.ExpiresAt())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
