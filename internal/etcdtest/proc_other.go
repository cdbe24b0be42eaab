//go:build !linux

package etcdtest

import "os/exec"

// setDeathSignal does nothing: only Linux kills a child with its parent.
func setDeathSignal(*exec.Cmd) {}
