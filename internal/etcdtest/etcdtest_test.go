package etcdtest

import (
	"context"
	"testing"
	"time"
)

func TestClusterServesAndSurvivesAMember(t *testing.T) {
	c := Start(t, 3)
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	leader, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(leader)
	if _, err := cli.Put(ctx, "k", "v2"); err != nil {
		t.Fatalf("put with the leader stopped: %v", err)
	}
	c.Restart(leader)
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v2" {
		t.Fatalf("got %v, want v2", resp.Kvs)
	}
}
