package partition

import (
	"errors"
	"strings"
	"testing"
)

// The values of Of are part of the cluster's stored layout: these are
// pinned so that a change to the hash fails here, not in production
// (FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c: 0x8c is 140).
func TestOfIsStable(t *testing.T) {
	for _, c := range []struct {
		account string
		want    ID
	}{
		{"a", 140},
		{"549755813888", 202},
		{"user-account-1", 62},
	} {
		if got := Of(c.account, DefaultCount); got != c.want {
			t.Errorf("Of(%q) = %d, want %d", c.account, got, c.want)
		}
	}
}

func TestOfSpreads(t *testing.T) {
	counts := make([]int, DefaultCount)
	for i := 0; i < 100_000; i++ {
		counts[Of(strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i), DefaultCount)]++
	}
	for p, n := range counts {
		if n < 250 || n > 550 {
			t.Fatalf("partition %d has %d of 100000 accounts, want about 390", p, n)
		}
	}
}

func itoa(i int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}

func TestFenceRoundTrip(t *testing.T) {
	f := Fence{Partition: 255, Revision: 1 << 40}
	g, err := DecodeFence(f.Encode())
	if err != nil || g != f {
		t.Fatalf("DecodeFence(Encode(%v)) = %v, %v", f, g, err)
	}
	for _, bad := range [][]byte{nil, make([]byte, 11), make([]byte, FenceLen)} {
		if _, err := DecodeFence(bad); !errors.Is(err, ErrBadFence) {
			t.Errorf("DecodeFence(%v) = %v, want ErrBadFence", bad, err)
		}
	}
}

func TestKeys(t *testing.T) {
	k := NewKeys("/pinbot")
	if got := k.Owner(7); got != "/pinbot/owners/00007" {
		t.Errorf("Owner(7) = %q", got)
	}
	if got := k.State(300); got != "/pinbot/state/00300/" {
		t.Errorf("State(300) = %q", got)
	}
	if !strings.HasPrefix(k.State(1), k.States()) || !strings.HasPrefix(k.Owner(1), k.Owners()) {
		t.Error("a partition's key is not under its prefix")
	}
}
