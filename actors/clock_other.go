//go:build !linux

package actors

import "time"

var elapsed = fallbackElapsed

// systemUptime has no boot ID here: no time is carried across restarts.
var systemUptime Uptime = monoUptime{}

type monoUptime struct{}

func (monoUptime) BootID() string { return "" }

func (monoUptime) Now() int64 { return elapsed() / int64(time.Millisecond) }
