package persistence

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Fixed engine instants (Unix ms) used as event times.
const (
	t0 = int64(1_700_000_000_000)
	t1 = t0 + 60_000
)

func reserve(seq, id uint64, at int64) Event {
	return Event{Seq: seq, Kind: EventReserve, ID: id, Count: 1, At: at, Deadline: at + 30_000}
}

// TestExpirySecond: ExpiresAt rounds up to the second; 0 and below mean
// never.
func TestExpirySecond(t *testing.T) {
	tests := []struct {
		ms   int64
		want uint64
	}{
		{math.MinInt64, 0},
		{-1, 0},
		{0, 0},
		{1, 1},
		{999, 1},
		{1000, 1},
		{1001, 2},
		{t0, uint64(t0 / 1000)},
		{t0 + 1, uint64(t0/1000) + 1},
		{math.MaxInt64, math.MaxInt64/1000 + 1},
	}
	for _, tt := range tests {
		w := AccountWrite{ExpiresAt: tt.ms}
		if got := w.ExpirySecond(); got != tt.want {
			t.Errorf("ExpiresAt %d: ExpirySecond() = %d, want %d", tt.ms, got, tt.want)
		}
	}
}

// TestBatchValidate: a nil batch, an invalid account ID anywhere in the
// batch, and an event with Seq 0 are refused, with persistence errors.
func TestBatchValidate(t *testing.T) {
	longest := strings.Repeat("x", MaxAccountLen)
	ok := AccountWrite{Account: longest, Events: []Event{reserve(1, 1, t0)}}
	tests := []struct {
		name    string
		b       *Batch
		invalid bool // the error wraps ErrInvalidAccount
		fails   bool
	}{
		{"empty", &Batch{}, false, false},
		{"longest account", &Batch{Accounts: []AccountWrite{ok}}, false, false},
		{"nil", nil, false, true},
		{"empty account", &Batch{Accounts: []AccountWrite{ok, {Account: ""}}}, true, true},
		{"long account", &Batch{Accounts: []AccountWrite{{Account: longest + "x"}}}, true, true},
		{"NUL in account", &Batch{Accounts: []AccountWrite{{Account: "a\x00b"}}}, true, true},
		{"seq 0", &Batch{Accounts: []AccountWrite{{Account: "a", Events: []Event{reserve(0, 1, t0)}}}}, false, true},
	}
	for _, tt := range tests {
		err := tt.b.Validate()
		if (err != nil) != tt.fails || errors.Is(err, ErrInvalidAccount) != tt.invalid {
			t.Errorf("%s: Validate() = %v, want failure %v (invalid account %v)", tt.name, err, tt.fails, tt.invalid)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "persistence: ") {
			t.Errorf("%s: Validate() = %q, want a persistence error", tt.name, err)
		}
	}
	if err := CheckAccount(strings.Repeat("y", 1000)); !strings.Contains(err.Error(), "(1000 bytes)") ||
		len(err.Error()) > MaxAccountLen+100 {
		t.Errorf("CheckAccount of 1000 bytes = %q, want the ID cut short and its length", err)
	}
	if !ValidAccount([]byte("a")) || ValidAccount([]byte("a\x00")) {
		t.Error("ValidAccount of a byte slice disagrees with the string form")
	}
}
