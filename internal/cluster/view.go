package cluster

import (
	"encoding/json"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// view is what the member knows of the cluster's member and owner keys,
// from one Get and the watch after it, current as of revision rev.
type view struct {
	rev     int64
	members map[string]memberKey
	owners  map[res]ownerKey
}

type memberKey struct {
	info  MemberInfo
	lease clientv3.LeaseID
}

type ownerKey struct {
	member string
	create int64 // the key's create revision: its holder's fence
	lease  clientv3.LeaseID
}

func newView(rev int64) view {
	return view{rev: rev, members: make(map[string]memberKey), owners: make(map[res]ownerKey)}
}

// apply applies one key's change (its value, create revision and lease
// when put); keys under neither prefix, and owner keys of partitions or
// shards outside [0, count), are ignored.
func (m *Member) apply(v *view, k, value []byte, create, lease int64, deleted bool) {
	key := string(k)
	switch {
	case strings.HasPrefix(key, m.keys.Members()):
		id := strings.TrimPrefix(key, m.keys.Members())
		if deleted {
			delete(v.members, id)
			return
		}
		info := MemberInfo{}
		if err := json.Unmarshal(value, &info); err != nil {
			m.log.Warn().Err(err).Str("peer", id).Msg("unreadable member key; counted as a member without an address")
			info = MemberInfo{}
		}
		info.ID = id
		v.members[id] = memberKey{info: info, lease: clientv3.LeaseID(lease)}
	case strings.HasPrefix(key, m.keys.Owners()):
		r, ok := m.parseOwnerKey(strings.TrimPrefix(key, m.keys.Owners()))
		if !ok {
			return
		}
		if deleted {
			delete(v.owners, r)
			return
		}
		v.owners[r] = ownerKey{member: string(value), create: create, lease: clientv3.LeaseID(lease)}
	}
}
