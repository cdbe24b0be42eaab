package etcdstore

import (
	"testing"

	"github.com/pinbot/pinbot/internal/etcdtest"
)

// TestDebianEtcd runs the package's tests against Debian's etcd server
// (etcd-server, 3.4 in bookworm), processes of its executable, through
// pinbot's etcd client.
func TestDebianEtcd(t *testing.T) {
	start := etcdtest.Binary(etcdtest.DebianEtcd(t))
	t.Run("Store", func(t *testing.T) { testStore(t, start) })
	t.Run("Unreachable", func(t *testing.T) { testUnreachable(t, start) })
	t.Run("QuotaFull", func(t *testing.T) { testQuotaFull(t, start, false) })
}
