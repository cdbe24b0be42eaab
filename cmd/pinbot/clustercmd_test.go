package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/clusterconf"
	"github.com/pinbot/pinbot/internal/etcdtest"
	"github.com/pinbot/pinbot/internal/partition"
)

// TestClusterStatus: cluster status reads the settings, the live members
// and who holds which partitions from etcd; an etcd with no cluster, a
// missing endpoint and a wrong subcommand are each said plainly.
func TestClusterStatus(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t, 1)
	env := map[string]string{"PINBOT_ETCD_ENDPOINTS": strings.Join(etcd.Endpoints(), ",")}

	r := pinbot(t, "", env, "cluster", "status")
	r.wantCode(t, "cluster status, no cluster", exitOK)
	if !strings.Contains(r.stdout, "No pinbot cluster in this etcd") {
		t.Fatalf("cluster status of an empty etcd:\n%s", r.stdout)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli := etcd.Client()
	keys := partition.NewKeys(clusterPrefix)
	const parts = 8
	if _, err := clusterconf.Agree(ctx, cli, keys, clusterconf.Settings{
		Partitions: parts, Limit: 100, Window: 12 * time.Hour, Lease: 5 * time.Minute, Shards: 2,
		EncryptionKey: "e", ClusterKey: "c",
	}); err != nil {
		t.Fatal(err)
	}
	var members []*cluster.Member
	for _, id := range []string{"m1", "m2"} {
		m, err := cluster.Start(ctx, cluster.Config{
			Client: cli, Keys: keys, Member: id, Addr: id + ".example:7946", Partitions: parts, Log: zerolog.Nop(),
			Acquired: func(partition.ID, partition.Fence) error { return nil },
			Lost:     func(partition.ID) {},
			Release:  func(context.Context, partition.ID) error { return nil },
			Shards: cluster.ShardConfig{Count: 2,
				Acquired: func(int) error { return nil }, Lost: func(int) {},
				Release: func(context.Context, int) error { return nil }},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(context.Background())
		members = append(members, m)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(members[0].Held())+len(members[1].Held()) != parts || len(members[0].HeldShards())+len(members[1].HeldShards()) != 2 ||
		members[0].Status().Moving+members[1].Status().Moving != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the partitions did not settle between the two members")
		}
		time.Sleep(10 * time.Millisecond) // ownership settles through etcd's watches
	}
	r = pinbot(t, "", env, "cluster", "status")
	r.wantCode(t, "cluster status", exitOK)
	t.Logf("cluster status:\n%s", r.stdout)
	for _, want := range []string{
		"Settings: 8 partitions, 100 pins per 12 hours, lease 5m0s, 2 gateway shards\n",
		"Members: 2\n",
		"m1       m1.example:7946",
		"m2       m2.example:7946",
		"Every partition has an owner.\n",
		"Every gateway shard is open on a member.\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("cluster status lacks %q:\n%s", want, r.stdout)
		}
	}
	held := map[string]int{"m1": len(members[0].Held()), "m2": len(members[1].Held())}
	shards := map[string]int{"m1": len(members[0].HeldShards()), "m2": len(members[1].HeldShards())}
	rows := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || (f[0] != "m1" && f[0] != "m2") {
			continue
		}
		rows++
		if f[3] != strconv.Itoa(held[f[0]]) || f[4] != strconv.Itoa(shards[f[0]]) {
			t.Errorf("%s: %s partitions and %s shards, want %d and %d", f[0], f[3], f[4], held[f[0]], shards[f[0]])
		}
	}
	if rows != 2 {
		t.Errorf("cluster status shows %d member rows, want 2:\n%s", rows, r.stdout)
	}

	r = pinbot(t, "", nil, "cluster", "status")
	r.wantCode(t, "cluster status without etcd", exitUsage)
	if !strings.Contains(r.stderr, "cluster status needs PINBOT_ETCD_ENDPOINTS (or --etcd-endpoints)") {
		t.Errorf("cluster status without an endpoint: %q", r.stderr)
	}
	r = pinbot(t, "", env, "cluster", "stats")
	r.wantCode(t, "cluster stats", exitUsage)
	if !strings.Contains(r.stderr, "want the subcommand status") {
		t.Errorf("cluster stats: %q", r.stderr)
	}
}
