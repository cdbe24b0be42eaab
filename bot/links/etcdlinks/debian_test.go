package etcdlinks

import (
	"testing"

	"github.com/pinbot/pinbot/internal/etcdtest"
)

// TestDebianEtcd runs the package's etcd tests against Debian's etcd
// server (etcd-server, 3.4 in bookworm), a process of its executable,
// through pinbot's etcd client. etcd 3.4 has no --unsafe-no-fsync: its
// member syncs its disk.
func TestDebianEtcd(t *testing.T) {
	path := etcdtest.DebianEtcd(t)
	t.Run("Store", func(t *testing.T) { testEtcd(t, etcdtest.StartBinary(t, 1, path)) })
	t.Run("Stopped", func(t *testing.T) { testEtcdStopped(t, etcdtest.StartBinary(t, 1, path)) })
}
