package loopback

import (
	"net"
	"strconv"
	"testing"
)

// TestAddrBelowEphemeral: the addresses are free loopback ports below the
// kernel's ephemeral range, and one process does not hand one out twice.
func TestAddrBelowEphemeral(t *testing.T) {
	top := ephemeralLow()
	seen := map[string]bool{}
	for range 50 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(p)
		if host != "127.0.0.1" || port < floor || port >= top {
			t.Fatalf("Addr() = %s, want 127.0.0.1 and a port in %d-%d", addr, floor, top-1)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		defer ln.Close() // held: the next ones must skip it
	}
}
