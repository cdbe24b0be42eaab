// Package loopback picks loopback addresses for servers a test or a
// development cluster starts as separate processes, under an address they
// keep across restarts.
//
// An address taken from a listener on port 0 and closed is in the kernel's
// ephemeral range: until the process binds it, and while it is down between
// two runs, the kernel may hand the port to any other socket (another
// listener on port 0, or the local end of an outgoing connection), and the
// process then fails to start with "address already in use". Addr picks
// ports below that range instead, which the kernel never hands out by
// itself.
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// floor is the lowest port Addr picks.
const floor = 20000

var (
	mu     sync.Mutex
	top    int // the first port of the ephemeral range
	cursor int // the next port to try, an offset from floor
	inited bool
)

// Addr returns "127.0.0.1:port" for a port below the kernel's ephemeral
// range that nothing listens on now. Ports are handed out in turn from a
// random start, so that test processes running side by side seldom try the
// same ones, and one process never hands out a port twice before it has
// gone through the whole range.
func Addr() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if !inited {
		top = ephemeralLow()
		if top-floor > 0 {
			cursor = rand.IntN(top - floor)
		}
		inited = true
	}
	n := top - floor
	if n < 1000 {
		// No room below the ephemeral range: the kernel's choice.
		return anyPort()
	}
	for range n {
		port := floor + cursor%n
		cursor++
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			return "", fmt.Errorf("loopback: %w", err)
		}
		return addr, nil
	}
	return "", fmt.Errorf("loopback: no free port in %d-%d", floor, top-1)
}

func anyPort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("loopback: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("loopback: %w", err)
	}
	return addr, nil
}

// ephemeralLow is the first port of Linux's ephemeral range, or IANA's
// (49152) where the range cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 49152
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 49152
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= 0 || lo > 65535 {
		return 49152
	}
	return lo
}
