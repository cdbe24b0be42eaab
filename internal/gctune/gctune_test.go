package gctune

import (
	"io/fs"
	"math"
	"strings"
	"testing"
)

// fakeEnv records what Apply sets, starting from the runtime's defaults
// (GOGC 100, no limit) or what the environment's GOGC and GOMEMLIMIT say.
type fakeEnv struct {
	vars    map[string]string
	avail   int64
	percent int
	limit   int64
	sets    int // calls that changed something
}

func (f *fakeEnv) env() Env {
	return Env{
		Getenv:    func(k string) string { return f.vars[k] },
		Available: func() int64 { return f.avail },
		SetGCPercent: func(p int) int {
			old := f.percent
			f.percent = p
			f.sets++
			return old
		},
		SetMemoryLimit: func(n int64) int64 {
			old := f.limit
			if n >= 0 {
				f.limit = n
				f.sets++
			}
			return old
		},
	}
}

func TestApply(t *testing.T) {
	const gib = int64(1) << 30
	for _, c := range []struct {
		name             string
		vars             map[string]string
		avail            int64
		limit            string
		percent          int
		percentFrom      string
		bytes            int64
		bytesFrom        string
		runtimeP, envLim int64 // what GOGC and GOMEMLIMIT made the runtime start with
	}{
		{name: "defaults", avail: 8 * gib, percent: 400, percentFrom: "default", bytes: 6 * gib, bytesFrom: "default"},
		{name: "nothing known of the memory", percent: 400, percentFrom: "default", bytes: math.MaxInt64, bytesFrom: "none"},
		{name: "setting", avail: 8 * gib, limit: "2GiB", percent: 400, percentFrom: "default", bytes: 2 * gib, bytesFrom: "PINBOT_MEMORY_LIMIT"},
		{name: "setting off", avail: 8 * gib, limit: "off", percent: 400, percentFrom: "default", bytes: math.MaxInt64, bytesFrom: "PINBOT_MEMORY_LIMIT"},
		{name: "GOGC wins", vars: map[string]string{"GOGC": "150"}, runtimeP: 150, avail: 8 * gib,
			percent: 150, percentFrom: "GOGC", bytes: 6 * gib, bytesFrom: "default"},
		{name: "GOMEMLIMIT wins over the setting", vars: map[string]string{"GOMEMLIMIT": "1GiB"}, envLim: gib, avail: 8 * gib, limit: "2GiB",
			percent: 400, percentFrom: "default", bytes: gib, bytesFrom: "GOMEMLIMIT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeEnv{vars: c.vars, avail: c.avail, percent: 100, limit: math.MaxInt64}
			if c.runtimeP != 0 {
				f.percent = int(c.runtimeP)
			}
			if c.envLim != 0 {
				f.limit = c.envLim
			}
			s, err := Apply(f.env(), "PINBOT_MEMORY_LIMIT", c.limit)
			if err != nil {
				t.Fatal(err)
			}
			want := Settings{GCPercent: c.percent, GCPercentFrom: c.percentFrom, MemoryLimit: c.bytes, MemoryLimitFrom: c.bytesFrom}
			if s != want {
				t.Errorf("Apply = %+v, want %+v", s, want)
			}
			if f.percent != c.percent || f.limit != c.bytes {
				t.Errorf("runtime left with GOGC %d, limit %d; want %d, %d", f.percent, f.limit, c.percent, c.bytes)
			}
		})
	}
}

func TestApplyBadLimitChangesNothing(t *testing.T) {
	f := &fakeEnv{avail: 1 << 30, percent: 100, limit: math.MaxInt64}
	_, err := Apply(f.env(), "--memory-limit", "2GB")
	if err == nil || !strings.Contains(err.Error(), `invalid --memory-limit "2GB"`) {
		t.Fatalf("Apply(2GB) error %v, want one naming the setting", err)
	}
	if f.sets != 0 {
		t.Errorf("Apply changed the runtime %d times before failing", f.sets)
	}
}

func TestParseLimit(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"1", 1}, {"512B", 512}, {"64KiB", 64 << 10}, {"300MiB", 300 << 20}, {"2GiB", 2 << 30}, {"1TiB", 1 << 40},
		{"off", math.MaxInt64},
	} {
		if got, err := ParseLimit(c.in); err != nil || got != c.want {
			t.Errorf("ParseLimit(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "0", "-1GiB", "2GB", "1.5GiB", "GiB", "9999999TiB", "Off"} {
		if got, err := ParseLimit(in); err == nil {
			t.Errorf("ParseLimit(%q) = %d, want an error", in, got)
		}
	}
}

func TestAvailable(t *testing.T) {
	meminfo := "MemTotal:       24576000 kB\nMemFree:        1000 kB\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"RAM", map[string]string{"/proc/meminfo": meminfo}, 24576000 << 10},
		{"cgroup below RAM", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "1073741824\n"}, 1 << 30},
		{"cgroup without a limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n"}, 24576000 << 10},
		{"cgroup above RAM", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "99999999999999\n"}, 24576000 << 10},
		{"cgroup alone", map[string]string{"/sys/fs/cgroup/memory.max": "1073741824"}, 1 << 30},
		{"cgroup v1 below RAM", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912\n"}, 512 << 20},
		{"cgroup v1 without a limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 24576000 << 10},
		{"cgroup v1 alone", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912"}, 512 << 20},
		{"both cgroups, the lower wins", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "1073741824", "/sys/fs/cgroup/memory/memory.limit_in_bytes": "536870912"}, 512 << 20},
		{"nothing", nil, 0},
		{"unreadable meminfo", map[string]string{"/proc/meminfo": "MemTotal: lots kB\n"}, 0},
	} {
		read := func(name string) ([]byte, error) {
			if v, ok := c.files[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		}
		if got := available(read); got != c.want {
			t.Errorf("%s: available = %d, want %d", c.name, got, c.want)
		}
	}
}
