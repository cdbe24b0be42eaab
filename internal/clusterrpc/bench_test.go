package clusterrpc_test

import (
	"context"
	"testing"
)

// BenchmarkCall measures a small call's round trip over loopback: MACs,
// HTTP/2 framing, the replay cache and the offset measure.
func BenchmarkCall(b *testing.B) {
	p := startPeer(b, peerConfig{})
	c := newClient(b, "alice", nil)
	ctx := context.Background()
	body := []byte("account 1234: pin message 5678, image 0")
	if _, err := c.Call(ctx, p.addr, "echo", body); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Call(ctx, p.addr, "echo", body); err != nil {
			b.Fatal(err)
		}
	}
}
