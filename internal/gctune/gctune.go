// Package gctune sets the Go collector's defaults for a pinbot process.
//
// The engine keeps every resident account in its own heap objects (an
// actor, its mailbox and its ledger), so the live heap grows with the
// accounts in use, and each collection marks all of it while grants wait
// for the cores it takes. Collections are made rarer with a higher GOGC,
// and a soft memory limit keeps the heap that this lets grow below what
// the machine or the container has. See docs/design.md, "Memory and the
// collector", and docs/benchmarks.md for the measurements.
package gctune

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultGCPercent is the GOGC pinbot runs with unless GOGC is set: a
// collection starts once the heap has grown by four times what the last
// one left live.
const DefaultGCPercent = 400

// DefaultLimitShare is the share of the memory available (the cgroup's
// limit, else the machine's RAM) taken as the soft memory limit unless
// GOMEMLIMIT or a limit of pinbot's own is set.
const DefaultLimitShare = 0.75

// Settings are the collector's settings a process runs with.
type Settings struct {
	// GCPercent is the GOGC in force; -1 is off.
	GCPercent int
	// GCPercentFrom says where it came from: "GOGC" or "default".
	GCPercentFrom string
	// MemoryLimit is the soft memory limit in bytes; math.MaxInt64 is none.
	MemoryLimit int64
	// MemoryLimitFrom says where it came from: "GOMEMLIMIT", the setting's
	// name, "default" (a share of Available), or "none" (nothing known of
	// the memory available).
	MemoryLimitFrom string
}

// Env is what Apply reads of the process's surroundings; tests replace it.
type Env struct {
	// Getenv reads an environment variable.
	Getenv func(string) string
	// Available returns the memory available to the process in bytes, 0
	// when unknown.
	Available func() int64
	// SetGCPercent and SetMemoryLimit are runtime/debug's.
	SetGCPercent   func(int) int
	SetMemoryLimit func(int64) int64
}

// ProcessEnv is the Env of the running process.
func ProcessEnv() Env {
	return Env{Getenv: os.Getenv, Available: Available, SetGCPercent: debug.SetGCPercent, SetMemoryLimit: debug.SetMemoryLimit}
}

// Apply sets the collector's defaults that the environment leaves open:
// GOGC to DefaultGCPercent unless GOGC is set, and the soft memory limit,
// unless GOMEMLIMIT is set, to limit (the value of the setting named
// limitName, in GOMEMLIMIT's syntax: bytes with an optional B, KiB, MiB,
// GiB or TiB suffix, or "off") or, when limit is "", to DefaultLimitShare
// of the memory available. It returns what is in force, or an error
// naming limitName when limit cannot be read, before changing anything.
func Apply(env Env, limitName, limit string) (Settings, error) {
	var s Settings
	var limitBytes int64
	switch {
	case env.Getenv("GOMEMLIMIT") != "":
		s.MemoryLimitFrom = "GOMEMLIMIT"
	case limit != "":
		n, err := ParseLimit(limit)
		if err != nil {
			return Settings{}, fmt.Errorf("invalid %s %q: %w", limitName, limit, err)
		}
		limitBytes, s.MemoryLimitFrom = n, limitName
	default:
		if avail := env.Available(); avail > 0 {
			limitBytes, s.MemoryLimitFrom = int64(float64(avail)*DefaultLimitShare), "default"
		} else {
			limitBytes, s.MemoryLimitFrom = math.MaxInt64, "none"
		}
	}
	if env.Getenv("GOGC") != "" {
		// Reading the value sets it again: SetGCPercent returns the old one.
		s.GCPercent = env.SetGCPercent(100)
		env.SetGCPercent(s.GCPercent)
		s.GCPercentFrom = "GOGC"
	} else {
		env.SetGCPercent(DefaultGCPercent)
		s.GCPercent, s.GCPercentFrom = DefaultGCPercent, "default"
	}
	if s.MemoryLimitFrom == "GOMEMLIMIT" {
		s.MemoryLimit = env.SetMemoryLimit(-1) // a negative value only reads it
	} else {
		env.SetMemoryLimit(limitBytes)
		s.MemoryLimit = limitBytes
	}
	return s, nil
}

// ParseLimit reads a memory limit written as GOMEMLIMIT is: a whole number
// of bytes with an optional unit (B, KiB, MiB, GiB, TiB), or "off" for
// none (math.MaxInt64).
func ParseLimit(s string) (int64, error) {
	if s == "off" {
		return math.MaxInt64, nil
	}
	units := []struct {
		suffix string
		shift  uint
	}{{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"B", 0}}
	num, shift := s, uint(0)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, shift = strings.TrimSuffix(s, u.suffix), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("want a positive whole number of bytes with an optional unit (B, KiB, MiB, GiB, TiB), such as 2GiB, or off")
	}
	return n << shift, nil
}

// Available returns the memory available to this process: the limit of
// its cgroup (v2, or v1's memory controller) when one is set below the
// machine's RAM, else the RAM; 0 when none can be read.
func Available() int64 {
	return available(os.ReadFile)
}

func available(read func(string) ([]byte, error)) int64 {
	avail := memTotal(read)
	// cgroup v2's limit, then v1's, whose "no limit" is a number near
	// the largest int64 rather than "max".
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := read(path)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 && (avail == 0 || n < avail) {
			avail = n
		}
	}
	return avail
}

// memTotal reads MemTotal from /proc/meminfo, in bytes; 0 when it cannot.
func memTotal(read func(string) ([]byte, error)) int64 {
	b, err := read("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
