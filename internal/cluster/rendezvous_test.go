package cluster

import (
	"testing"

	"github.com/pinbot/pinbot/internal/partition"
)

// desired is part of the protocol: members of one cluster must agree on
// it, so its values are pinned.
func TestDesiredIsStable(t *testing.T) {
	members := []string{"a", "b", "c"}
	got := ""
	for p := range partition.ID(12) {
		got += desired(members, p)
	}
	const want = "babaccacbbbb"
	if got != want {
		t.Fatalf("desired owners of partitions 0-11 = %q, want %q", got, want)
	}
	if d := desired(nil, 0); d != "" {
		t.Fatalf("desired(nil) = %q, want none", d)
	}
}

func TestDesiredSpreadsAndMovesLittle(t *testing.T) {
	const n = partition.DefaultCount
	three := []string{"member-1", "member-2", "member-3"}
	four := append(append([]string(nil), three...), "member-4")
	counts := map[string]int{}
	for p := range partition.ID(n) {
		before, after := desired(three, p), desired(four, p)
		counts[before]++
		if after != before && after != "member-4" {
			t.Fatalf("partition %d moved from %s to %s when member-4 joined", p, before, after)
		}
	}
	for _, id := range three {
		if c := counts[id]; c < n/3-25 || c > n/3+25 {
			t.Errorf("%s wins %d of %d partitions, want about %d (%v)", id, c, n, n/3, counts)
		}
	}
}

func TestDesiredOrderFree(t *testing.T) {
	for p := range partition.ID(64) {
		a := desired([]string{"x", "y", "z"}, p)
		b := desired([]string{"z", "x", "y"}, p)
		if a != b {
			t.Fatalf("partition %d: %s or %s depending on order", p, a, b)
		}
	}
}
