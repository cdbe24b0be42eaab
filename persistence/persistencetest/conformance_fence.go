package persistencetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/pinbot/pinbot/persistence"
)

// testFence checks what a store does with Batch.Fence: it ignores it, or
// refuses a write whose token it holds stale with an error wrapping
// persistence.ErrFenced, having applied nothing of the batch (neither
// events nor the high-water mark). Either way it answers the same write
// under the same token the same way when nothing else changed, and it
// keeps no reference to the caller's token.
func testFence(t *testing.T, open storeFactory) {
	s := open(t)
	ctx := t.Context()
	// Tokens as successive owners would write them, then a stale owner
	// coming back, then a writer claiming no fence.
	tokens := []string{"", "fence-1", "fence-2", "fence-1", ""}
	for i, tok := range tokens {
		acct := fmt.Sprintf("fence-%d", i)
		var fence []byte
		if tok != "" {
			fence = []byte(tok)
		}
		write := func(seq uint64) error {
			return s.Write(ctx, &persistence.Batch{
				Accounts:  []persistence.AccountWrite{{Account: acct, Events: []persistence.Event{Reserve(seq, seq, T0)}}},
				HighWater: T0 + int64(i),
				Fence:     fence,
			})
		}
		hw, err := s.HighWater(ctx)
		if err != nil {
			t.Fatalf("HighWater: %v", err)
		}
		switch err := write(1); {
		case err == nil:
			if err := write(2); err != nil {
				t.Fatalf("write %d under fence %q: accepted, then refused: %v", i, tok, err)
			}
			CheckLoaded(t, s, acct, persistence.Loaded{Events: []persistence.Event{Reserve(1, 1, T0), Reserve(2, 2, T0)}})
		case errors.Is(err, persistence.ErrFenced):
			if err := write(1); !errors.Is(err, persistence.ErrFenced) {
				t.Fatalf("write %d under fence %q: refused as fenced off, then %v", i, tok, err)
			}
			CheckLoaded(t, s, acct, persistence.Loaded{})
			if got, err := s.HighWater(ctx); err != nil || got != hw {
				t.Fatalf("high-water mark after a fenced-off write: %d, %v; want %d", got, err, hw)
			}
		default:
			t.Fatalf("write %d under fence %q: %v, want nil or an error wrapping ErrFenced", i, tok, err)
		}
		// The caller may reuse its buffer once Write returned.
		for j := range fence {
			fence[j] = 0xff
		}
	}
}
