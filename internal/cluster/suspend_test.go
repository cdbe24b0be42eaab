package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

// servedBy reports whether every partition is held by exactly one of
// serving, its desired owner among them, none moving, while all of ms
// (serving and suspended ones) see each other and agree on the owners,
// and the members outside serving hold nothing.
func (w *world) servedBy(serving []string, ms ...*Member) bool {
	holders := make(map[partition.ID][]string)
	for _, m := range ms {
		if !m.Ready() {
			return false
		}
		if st := m.Status(); st.Members != len(ms) || st.Moving != 0 {
			return false
		}
		held := m.Held()
		if !slices.Contains(serving, m.ID()) && len(held) != 0 {
			return false
		}
		for _, p := range held {
			holders[p] = append(holders[p], m.ID())
		}
	}
	for p := range partition.ID(w.partitions) {
		h := holders[p]
		if len(h) != 1 || h[0] != desired(serving, p) {
			return false
		}
		for _, m := range ms {
			if info, ok := m.OwnerOf(w.accountOf(p)); !ok || info.ID != h[0] {
				return false
			}
		}
	}
	return true
}

// TestSuspendAndResume: a suspended member hands every partition over
// to the others (Release, then its key deleted), acquires none, and
// stays a member the others see as suspended; no partition is ever
// served by two members. Resumed, it takes its share again, handed back
// by the others.
func TestSuspendAndResume(t *testing.T) {
	w := newWorld(t, etcdtest.Start, 1, 16, testTTL)
	a, b, c := w.start(w.config("a")), w.start(w.config("b")), w.start(w.config("c"))
	w.waitFor("a, b and c to share the partitions", func() bool { return w.settled(a, b, c) })
	bHeld := b.Held()
	if len(bHeld) == 0 {
		t.Fatal("b holds no partition")
	}
	if _, ok := b.Suspended(); ok {
		t.Fatal("b suspended before Suspend")
	}
	// b may have handed partitions over already, to a member that joined
	// after it.
	handedBefore := w.counted("b").handedOver.Load()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Suspend(ctx, "clock out of bound"); err != nil {
		t.Fatalf("Suspend: %v", err)
	}
	if r, ok := b.Suspended(); !ok || r != "clock out of bound" {
		t.Errorf("Suspended() = %q, %v", r, ok)
	}
	w.waitFor("a and c to serve every partition, b none", func() bool {
		return w.servedBy([]string{"a", "c"}, a, b, c)
	})
	// Each of b's partitions left by a handover, and went to its owner
	// among a and c.
	for _, p := range bHeld {
		ts := w.tenuresOf(p)
		if len(ts) < 2 || ts[len(ts)-2].member != "b" || ts[len(ts)-2].how != "release" || ts[len(ts)-1].member != desired([]string{"a", "c"}, p) {
			t.Errorf("partition %d after b's suspension: %+v, want b's release, then its owner among a and c", p, ts)
		}
		if _, err := b.Serving(w.accountOf(p)); !errors.Is(err, ErrNotOwner) {
			t.Errorf("b.Serving(partition %d) suspended = %v, want ErrNotOwner", p, err)
		}
	}
	if cb := w.counted("b"); cb.handedOver.Load()-handedBefore != int64(len(bHeld)) || cb.lost.Load() != 0 {
		t.Errorf("b handed over %d and lost %d, want %d and 0", cb.handedOver.Load()-handedBefore, cb.lost.Load(), len(bHeld))
	}
	// The others see b, suspended, among the members.
	for _, m := range []*Member{a, c} {
		ms := m.Members()
		if i := slices.IndexFunc(ms, func(i MemberInfo) bool { return i.ID == "b" }); i < 0 || ms[i].Suspended != "clock out of bound" {
			t.Errorf("%s sees members %+v, want b suspended", m.ID(), ms)
		}
	}
	// Suspended again (the skew check does so every round): nothing moves.
	if err := b.Suspend(ctx, "clock out of bound"); err != nil {
		t.Fatalf("Suspend again: %v", err)
	}
	if !w.servedBy([]string{"a", "c"}, a, b, c) {
		t.Error("a second Suspend moved partitions")
	}

	if err := b.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if _, ok := b.Suspended(); ok {
		t.Error("b still suspended after Resume")
	}
	w.waitFor("b to take its share again", func() bool { return w.settled(a, b, c) })
	if !slices.Equal(b.Held(), bHeld) {
		t.Errorf("b holds %v after Resume, want %v again", b.Held(), bHeld)
	}
	for _, p := range bHeld {
		ts := w.tenuresOf(p)
		if n := len(ts); n < 3 || ts[n-2].how != "release" || ts[n-1].member != "b" {
			t.Errorf("partition %d after b resumed: %+v, want its owner's release, then b", p, ts)
		}
	}
	for _, m := range []*Member{a, c} {
		for _, info := range m.Members() {
			if info.Suspended != "" {
				t.Errorf("%s sees %s suspended after Resume", m.ID(), info.ID)
			}
		}
	}
	w.check()
}

// TestSuspendedMemberRegistersSuspended: a member suspended when its
// lease is lost registers again suspended (the new member key says so):
// it acquires nothing, and the other member keeps serving everything.
func TestSuspendedMemberRegistersSuspended(t *testing.T) {
	w := newWorld(t, etcdtest.Start, 1, 8, testTTL)
	a, b := w.start(w.config("a")), w.start(w.config("b"))
	w.waitFor("a and b to share the partitions", func() bool { return w.settled(a, b) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.Suspend(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	w.waitFor("a to serve every partition", func() bool { return w.servedBy([]string{"a"}, a, b) })

	// b's lease revoked behind its back: it registers again, under a new
	// lease, with the value it has now.
	old := b.Status().Lease
	if _, err := w.cli.Revoke(ctx, clientv3.LeaseID(old)); err != nil {
		t.Fatal(err)
	}
	w.waitFor("b to register again", func() bool {
		st := b.Status()
		return st.Lease != 0 && st.Lease != old && w.servedBy([]string{"a"}, a, b)
	})
	resp, err := w.cli.Get(ctx, w.keys.Member("b"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("b's member key: %v, %v", resp, err)
	}
	var info MemberInfo
	if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil || info.Suspended != "test" {
		t.Errorf("b's member key %s after registering again, want it suspended: %v", resp.Kvs[0].Value, err)
	}
	if err := b.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	w.waitFor("a and b to share the partitions again", func() bool { return w.settled(a, b) })
	w.check()
}
