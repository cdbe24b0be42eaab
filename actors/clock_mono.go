package actors

import "time"

// processStart carries Go's monotonic reading; time.Since uses it.
var processStart = time.Now()

func fallbackElapsed() int64 { return int64(time.Since(processStart)) }
