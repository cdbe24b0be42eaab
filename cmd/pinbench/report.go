package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/pinbot/pinbot/cmd/pinbench/internal/hist"
	"github.com/pinbot/pinbot/cmd/pinbench/internal/workload"
)

// latency summarizes a latency histogram, in nanoseconds.
type latency struct {
	P50  int64 `json:"p50_ns"`
	P99  int64 `json:"p99_ns"`
	P999 int64 `json:"p99_9_ns"`
	Max  int64 `json:"max_ns"`
	Mean int64 `json:"mean_ns"`
}

func summarize(h *hist.Histogram) latency {
	return latency{
		P50:  int64(h.Quantile(0.50)),
		P99:  int64(h.Quantile(0.99)),
		P999: int64(h.Quantile(0.999)),
		Max:  int64(h.Max()),
		Mean: int64(h.Mean()),
	}
}

// machine describes where a result was measured.
type machine struct {
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Host       string `json:"host,omitempty"`
}

func thisMachine() machine {
	host, _ := os.Hostname()
	return machine{
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Host:       host,
	}
}

func (m machine) String() string {
	return fmt.Sprintf("%s %s/%s, %d CPUs, GOMAXPROCS %d", m.GoVersion, m.OS, m.Arch, m.CPUs, m.GOMAXPROCS)
}

// workloadJSON is the workload part of a JSON report.
type workloadJSON struct {
	Accounts  int     `json:"accounts"`
	Dist      string  `json:"dist"`
	ZipfS     float64 `json:"zipf_s,omitempty"`
	ZipfV     float64 `json:"zipf_v,omitempty"`
	DurationS float64 `json:"duration_s,omitempty"`
	Ops       int64   `json:"ops,omitempty"`
	Seed      uint64  `json:"seed"`
	Limit     int     `json:"limit"`
	WindowMS  int64   `json:"window_ms"`
	Decision  string  `json:"decision"`
}

func describeWorkload(spec workload.Spec, f *commonFlags) workloadJSON {
	w := workloadJSON{
		Accounts:  spec.Accounts,
		Dist:      string(spec.Dist),
		DurationS: spec.Duration.Seconds(),
		Ops:       spec.Ops,
		Seed:      spec.Seed,
		Limit:     f.limit,
		WindowMS:  f.window.Milliseconds(),
		Decision:  decisionName(f.reserveOnly),
	}
	if spec.Dist == workload.Zipf {
		w.ZipfS, w.ZipfV = spec.ZipfS, spec.ZipfV
	}
	return w
}

func (w workloadJSON) String() string {
	dist := w.Dist
	if w.ZipfS != 0 {
		dist = fmt.Sprintf("zipf s=%g v=%g", w.ZipfS, w.ZipfV)
	}
	length := fmt.Sprintf("%s decisions", commas(w.Ops))
	if w.Ops == 0 {
		length = time.Duration(w.DurationS * float64(time.Second)).String()
	}
	return fmt.Sprintf("%s accounts (%s), limit %d per %v, %s per run, pinbot decision = %s",
		commas(int64(w.Accounts)), dist, w.Limit, time.Duration(w.WindowMS)*time.Millisecond, length, w.Decision)
}

func decisionName(reserveOnly bool) string {
	if reserveOnly {
		return "Reserve(1)"
	}
	return "Reserve(1)+CommitAsync"
}

// fmtDur formats d with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return sig3(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second:
		return sig3(float64(d)/float64(time.Millisecond)) + "ms"
	}
	return sig3(d.Seconds()) + "s"
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// fmtBytes formats n bytes in binary units.
func fmtBytes(n float64) string {
	switch {
	case n >= 1<<30 || n <= -(1<<30):
		return fmt.Sprintf("%.1f GiB", n/(1<<30))
	case n >= 1<<20 || n <= -(1<<20):
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	case n >= 1<<10 || n <= -(1<<10):
		return fmt.Sprintf("%.1f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}

// writeJSON prints v indented.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
