//go:build !linux

package child

import "syscall"

// Attr returns the attributes to start a helper process with. Outside
// Linux there is no parent-death signal: pinbench stops its helpers itself
// on every path it controls.
func Attr() *syscall.SysProcAttr { return nil }
