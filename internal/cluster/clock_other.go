//go:build !linux

package cluster

import "time"

var monoStart = time.Now()

func now() time.Duration { return time.Since(monoStart) }
