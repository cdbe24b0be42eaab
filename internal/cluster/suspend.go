package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// suspension is a member's suspended state (Suspend, Resume).
type suspension struct {
	// reason is why the member is suspended, "" when it is not; guarded
	// by Member.mu.
	reason string
	// mark serializes the puts of the member key's value, so that the
	// last one carries the latest state.
	mark sync.Mutex
}

// Suspend makes the member give up its partitions and acquire none until
// Resume, for reason (its clock out of bound, say): it stays a member
// (its key lives, it keeps its gateway shards, its peers still reach
// it), but its member key's value says it is suspended (MemberInfo.
// Suspended), so that every member, this one included, picks the
// partitions' owners among the others. This member hands each partition
// over as when a member joins: it refuses requests for it (ErrMoved),
// calls Release, then deletes the owner key; the desired owner among the
// others then acquires it. Ownership stays with the owner keys: nobody
// acquires a partition whose key lives, so no two members ever serve one.
//
// The handover begins at once; Suspend returns once the member key says
// so, or with the error of that write (ctx ended, etcd unreachable): the
// member is suspended all the same, and a later Suspend writes the key
// again. While the key does not say so yet, the others do not take the
// partitions given up. Suspend is idempotent; a new reason replaces the
// old one.
func (m *Member) Suspend(ctx context.Context, reason string) error {
	if reason == "" {
		reason = "suspended"
	}
	m.mu.Lock()
	was := m.susp.reason
	m.susp.reason = reason
	m.mu.Unlock()
	if was == "" {
		m.log.Warn().Str("reason", reason).Msg("suspended: giving up every partition, acquiring none")
	}
	m.wake()
	m.changed()
	return m.mark(ctx)
}

// Resume ends a suspension: once the member key says so (Resume writes
// it, and returns the write's error like Suspend), the members pick this
// one again, and it acquires its share (those handed to others come back
// by handover). A member not suspended is left as it is.
func (m *Member) Resume(ctx context.Context) error {
	m.mu.Lock()
	was := m.susp.reason
	m.susp.reason = ""
	m.mu.Unlock()
	if was != "" {
		m.log.Info().Str("reason", was).Msg("resumed: acquiring this member's share of the partitions again")
	}
	m.wake()
	m.changed()
	return m.mark(ctx)
}

// Suspended returns the reason of the member's suspension, and false
// when it is not suspended.
func (m *Member) Suspended() (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.susp.reason, m.susp.reason != ""
}

// suspendedLocked says whether member id, described by info, is left out
// when owners are picked: its key says it is suspended, or it is this
// member and suspended here (before its key says so). This member,
// resumed, waits for its key to say so, as the others do. m.mu is held.
func (m *Member) suspendedLocked(id string, info MemberInfo) bool {
	return info.Suspended != "" || (id == m.id && m.susp.reason != "")
}

// memberValue is the member key's value: the member's description, with
// its suspension.
func (m *Member) memberValue() string {
	m.mu.Lock()
	reason, noShards := m.susp.reason, m.shardsLeft
	m.mu.Unlock()
	if reason == "" && !noShards {
		return m.value
	}
	var info MemberInfo
	if err := json.Unmarshal([]byte(m.value), &info); err != nil {
		return m.value // built by Start from a MemberInfo: not reached
	}
	info.Suspended = reason
	if noShards {
		info.Shards = 0
	}
	b, err := json.Marshal(info)
	if err != nil {
		return m.value
	}
	return string(b)
}

// mark writes the member key's value again when the view shows it
// without the member's current suspension or shards (LeaveShards), under
// the current lease.
// Without a lease, or without the key, there is nothing to write: the
// registration and the key put again (register, reput) write the
// current value.
func (m *Member) mark(ctx context.Context) error {
	m.susp.mark.Lock()
	defer m.susp.mark.Unlock()
	m.mu.Lock()
	lease := m.lease
	self, seen := m.view.members[m.id]
	want := m.susp.reason
	wantShards := self.info.Shards
	if m.shardsLeft {
		wantShards = 0
	}
	m.mu.Unlock()
	if lease == 0 || (seen && self.lease == lease && self.info.Suspended == want && self.info.Shards == wantShards) {
		return nil
	}
	key := m.keys.Member(m.id)
	_, err := m.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(key), "=", lease)).
		Then(clientv3.OpPut(key, m.memberValue(), clientv3.WithLease(lease))).
		Commit()
	if err != nil {
		return fmt.Errorf("cluster: write the member key's state: %w", err)
	}
	return nil
}
