package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/pinbot/pinbot/internal/cluster"
	"github.com/pinbot/pinbot/internal/clusterrpc"
	"github.com/pinbot/pinbot/internal/metrics"
	"github.com/pinbot/pinbot/internal/metrics/metricstest"
	"github.com/pinbot/pinbot/persistence"
)

var _ cluster.Observer = (*metrics.ClusterMetrics)(nil)

// TestClusterNamesFollowConventions: the cluster's metrics pass
// Prometheus' linter, exist only once Cluster is called, and serve every
// known label value from the start, at 0.
func TestClusterNamesFollowConventions(t *testing.T) {
	m := metrics.New()
	if _, ok := metricstest.ScrapeHandler(t, m.Handler()).Lookup("pinbot_cluster_partitions_held"); ok {
		t.Fatal("a cluster metric is served outside a cluster")
	}
	m.Cluster([]string{"pin", "engine"})
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "pinbot_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
	s := metricstest.ScrapeHandler(t, m.Handler())
	for _, name := range []string{
		"pinbot_cluster_partitions_held", "pinbot_cluster_members", "pinbot_cluster_lease_remaining_seconds",
		"pinbot_cluster_partitions_acquired_total", "pinbot_cluster_partitions_lost_total",
		"pinbot_cluster_partitions_handed_over_total", "pinbot_cluster_deadline_lapses_total",
		"pinbot_cluster_lease_expiries_total", "pinbot_cluster_fenced_writes_total",
	} {
		if v, ok := s.Lookup(name); !ok || v != 0 {
			t.Errorf("%s = %v, %v; want 0, served", name, v, ok)
		}
	}
	for _, method := range []string{"pin", "engine", metrics.PeerPing, "other"} {
		for _, o := range metrics.PeerOutcomes {
			if _, ok := s.Lookup("pinbot_cluster_peer_calls_total", "method", method, "outcome", o); !ok {
				t.Errorf("pinbot_cluster_peer_calls_total{method=%q,outcome=%q} is not served", method, o)
			}
		}
	}
	for _, o := range metrics.ForwardOutcomes {
		if _, ok := s.Lookup("pinbot_cluster_forwards_total", "method", "pin", "outcome", o); !ok {
			t.Errorf("pinbot_cluster_forwards_total{method=\"pin\",outcome=%q} is not served", o)
		}
	}
	for _, r := range metrics.PeerRefusals {
		if _, ok := s.Lookup("pinbot_cluster_peer_refusals_total", "reason", r); !ok {
			t.Errorf("pinbot_cluster_peer_refusals_total{reason=%q} is not served", r)
		}
	}
	if series := s.Series("pinbot_cluster_peer_clock_offset_seconds"); len(series) != 0 {
		t.Errorf("clock offsets before any is watched: %v", series)
	}
}

// TestClusterMetrics: the membership's counters and gauges, the forwards,
// the etcd requests, the peers' clocks and the fenced writes, each with
// the values reported; values outside the lists count as other.
func TestClusterMetrics(t *testing.T) {
	m := metrics.New()
	c := m.Cluster([]string{"pin"})
	for range 3 {
		c.Acquired(1)
	}
	c.Lost(2)
	c.HandedOver(3)
	c.HandedOver(4)
	c.Lapsed()
	c.LeaseExpired()
	c.LeaseExpired()
	c.WatchMember(func() metrics.MemberSummary {
		return metrics.MemberSummary{Held: 5, Members: 3, Remaining: 1500 * time.Millisecond, Shards: 2}
	})
	c.ShardAcquired(0)
	c.ShardAcquired(1)
	c.ShardLost(0)
	c.ShardHandedOver(1)
	c.Forwarded("pin", "ok")
	c.Forwarded("pin", "refused")
	c.Forwarded("pin", "refused")
	c.Forwarded("pin", "unknown")
	c.Forwarded("pin", "bogus")
	c.Forwarded("nope", "ok")
	c.EtcdRequest("/etcdserverpb.KV/Range", 2*time.Millisecond, nil)
	c.EtcdRequest("/etcdserverpb.KV/Txn", 4*time.Millisecond, errors.New("etcdserver: request timed out"))
	c.EtcdRequest("/etcdserverpb.Watch/Progress", time.Millisecond, nil)
	c.WatchClocks(func() map[string]clusterrpc.Offset {
		return map[string]clusterrpc.Offset{
			"m2": {Offset: 2 * time.Second, RTT: 10 * time.Millisecond},
			"m3": {Offset: -30 * time.Millisecond, RTT: 4 * time.Millisecond},
		}
	})

	eng := c.Engine()
	fenced := fmt.Errorf("etcdstore: account \"a\": %w: partition 3 owned under a newer fence", persistence.ErrFenced)
	eng.JournalBatch(4, time.Millisecond, nil)
	eng.JournalBatch(3, time.Millisecond, fenced)
	eng.JournalBatch(5, time.Millisecond, &persistence.PartialWriteError{Failed: map[int]error{
		0: fenced, 2: fenced, 4: errors.New("etcdserver: request timed out"),
	}})
	eng.JournalBatch(2, time.Millisecond, errors.New("etcdserver: request timed out"))
	eng.Granted(2)

	s := metricstest.ScrapeHandler(t, m.Handler())
	for _, w := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"pinbot_cluster_partitions_acquired_total", nil, 3},
		{"pinbot_cluster_partitions_lost_total", nil, 1},
		{"pinbot_cluster_partitions_handed_over_total", nil, 2},
		{"pinbot_cluster_deadline_lapses_total", nil, 1},
		{"pinbot_cluster_lease_expiries_total", nil, 2},
		{"pinbot_cluster_partitions_held", nil, 5},
		{"pinbot_cluster_shards_held", nil, 2},
		{"pinbot_cluster_shards_acquired_total", nil, 2},
		{"pinbot_cluster_shards_lost_total", nil, 1},
		{"pinbot_cluster_shards_handed_over_total", nil, 1},
		{"pinbot_cluster_members", nil, 3},
		{"pinbot_cluster_lease_remaining_seconds", nil, 1.5},
		{"pinbot_cluster_forwards_total", []string{"method", "pin", "outcome", "ok"}, 1},
		{"pinbot_cluster_forwards_total", []string{"method", "pin", "outcome", "refused"}, 2},
		{"pinbot_cluster_forwards_total", []string{"method", "pin", "outcome", "unknown"}, 1},
		{"pinbot_cluster_forwards_total", []string{"method", "pin", "outcome", "other"}, 1},
		{"pinbot_cluster_forwards_total", []string{"method", "other", "outcome", "ok"}, 1},
		{"pinbot_cluster_etcd_request_seconds", []string{"method", "Range"}, 1},
		{"pinbot_cluster_etcd_request_seconds", []string{"method", "Txn"}, 1},
		{"pinbot_cluster_etcd_request_seconds", []string{"method", "other"}, 1},
		{"pinbot_cluster_etcd_request_failures_total", []string{"method", "Txn"}, 1},
		{"pinbot_cluster_etcd_request_failures_total", []string{"method", "Range"}, 0},
		{"pinbot_cluster_peer_clock_offset_seconds", []string{"peer", "m2"}, 2},
		{"pinbot_cluster_peer_clock_offset_seconds", []string{"peer", "m3"}, -0.03},
		{"pinbot_cluster_peer_clock_offset_error_seconds", []string{"peer", "m2"}, 0.005},
		{"pinbot_cluster_peer_clock_offset_error_seconds", []string{"peer", "m3"}, 0.002},
		// 3 refused whole, 2 of a partial failure; a failure of etcd
		// itself is not a fence.
		{"pinbot_cluster_fenced_writes_total", nil, 5},
		// The engine's own series count as before.
		{"pinbot_journal_write_failures_total", nil, 3},
		{"pinbot_journal_batch_writes", nil, 4},
		{"pinbot_engine_grants_total", nil, 2},
	} {
		if got := s.Get(w.name, w.labels...); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
		}
	}
	if got := s.HistogramSum("pinbot_cluster_etcd_request_seconds", "method", "Txn"); got != 0.004 {
		t.Errorf("etcd Txn seconds = %v, want 0.004", got)
	}

	// A peer no longer measured takes its series with it.
	c.WatchClocks(func() map[string]clusterrpc.Offset {
		return map[string]clusterrpc.Offset{"m3": {Offset: time.Millisecond}}
	})
	s = metricstest.ScrapeHandler(t, m.Handler())
	if series := s.Series("pinbot_cluster_peer_clock_offset_seconds"); len(series) != 1 || series[0]["peer"] != "m3" {
		t.Errorf("clock offset series after m2 left: %v, want m3's alone", series)
	}
}

// TestFencedWrites: what counts as a fenced write.
func TestFencedWrites(t *testing.T) {
	fenced := fmt.Errorf("store: %w", persistence.ErrFenced)
	other := errors.New("unreachable")
	for _, tc := range []struct {
		err    error
		writes int
		want   int
	}{
		{nil, 3, 0},
		{other, 3, 0},
		{fenced, 3, 3},
		{fmt.Errorf("journal: %w", fenced), 2, 2},
		{&persistence.PartialWriteError{Failed: map[int]error{1: fenced, 3: other}}, 4, 1},
		{&persistence.PartialWriteError{Failed: map[int]error{0: other}, HighWaterErr: fenced}, 4, 0},
	} {
		if got := metrics.FencedWrites(tc.err, tc.writes); got != tc.want {
			t.Errorf("FencedWrites(%v, %d) = %d, want %d", tc.err, tc.writes, got, tc.want)
		}
	}
}

// TestClusterPeerMetrics: calls between a real clusterrpc client and
// server count by method and outcome, pings under "ping", and the
// server's refusals by reason.
func TestClusterPeerMetrics(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	m := metrics.New()
	c := m.Cluster([]string{"pin"})
	srv, err := clusterrpc.NewServer(key, "m2", nil, zerolog.Nop(), clusterrpc.WithObserver(c.Peers()))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Handle("pin", func(ctx context.Context, from string, body []byte) ([]byte, error) {
		if string(body) == "refuse" {
			return nil, clusterrpc.Refuse("not_owner", "elsewhere")
		}
		return []byte("done"), nil
	}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	cli, err := clusterrpc.NewClient(key, "m1", nil, clusterrpc.WithObserver(c.Peers()))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addr := ln.Addr().String()
	if _, err := cli.Ping(ctx, addr); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Call(ctx, addr, "pin", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Call(ctx, addr, "pin", []byte("refuse")); !clusterrpc.IsRetryable(err) {
		t.Fatalf("a refused call: %v", err)
	}
	if _, err := cli.Call(ctx, addr, "nope", nil); err == nil {
		t.Fatal("an unknown method was served")
	}
	intruder, err := clusterrpc.NewClient([]byte("fedcba9876543210fedcba9876543210"), "m9", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	if _, err := intruder.Ping(ctx, addr); err == nil {
		t.Fatal("a ping with another key was answered")
	}

	want := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"pinbot_cluster_peer_calls_total", []string{"method", metrics.PeerPing, "outcome", "ok"}, 1},
		{"pinbot_cluster_peer_calls_total", []string{"method", "pin", "outcome", "ok"}, 1},
		{"pinbot_cluster_peer_calls_total", []string{"method", "pin", "outcome", "refused"}, 1},
		{"pinbot_cluster_peer_calls_total", []string{"method", "other", "outcome", "refused"}, 1},
		{"pinbot_cluster_peer_call_seconds", []string{"method", "pin"}, 2},
		// The server answers first and reports after: polled below.
		{"pinbot_cluster_peer_served_total", []string{"method", metrics.PeerPing, "outcome", "ok"}, 1},
		{"pinbot_cluster_peer_served_total", []string{"method", "pin", "outcome", "ok"}, 1},
		{"pinbot_cluster_peer_served_total", []string{"method", "pin", "outcome", "refused"}, 1},
		{"pinbot_cluster_peer_refusals_total", []string{"reason", clusterrpc.ReasonUnknownMethod}, 1},
		{"pinbot_cluster_peer_refusals_total", []string{"reason", clusterrpc.ReasonBadMAC}, 1},
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := metricstest.ScrapeHandler(t, m.Handler())
		var wrong []string
		for _, w := range want {
			if got := s.Get(w.name, w.labels...); got != w.want {
				wrong = append(wrong, fmt.Sprintf("%s%v = %v, want %v", w.name, w.labels, got, w.want))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(strings.Join(wrong, "\n"))
		}
		time.Sleep(5 * time.Millisecond) // the server's reports follow its answers
	}
}
