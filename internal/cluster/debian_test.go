package cluster

import (
	"testing"

	"github.com/pinbot/pinbot/internal/etcdtest"
)

// TestDebianEtcd runs the membership's tests against Debian's etcd
// server (etcd-server, 3.4 in bookworm), processes of its executable,
// through pinbot's etcd client; there the etcd leader can also crash.
func TestDebianEtcd(t *testing.T) {
	start := etcdtest.Binary(etcdtest.DebianEtcd(t))
	t.Run("JoinHandoverAndClose", func(t *testing.T) { testJoinHandoverAndClose(t, start) })
	t.Run("StalledMemberStopsAtDeadline", func(t *testing.T) { testStalledMemberStopsAtDeadline(t, start) })
	t.Run("DeadlineByClock", func(t *testing.T) { testDeadlineByClock(t, start) })
	t.Run("LeaderStopped", func(t *testing.T) { testLeaderLoss(t, start, (*etcdtest.Cluster).Stop) })
	t.Run("LeaderKilled", func(t *testing.T) { testLeaderLoss(t, start, (*etcdtest.Cluster).Kill) })
}
