package child

import "syscall"

// Attr returns the attributes to start a helper process with: on Linux the
// kernel sends it SIGKILL when pinbench dies, so that neither an interrupt
// nor a crash leaves a redis-server or an engine child behind.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
