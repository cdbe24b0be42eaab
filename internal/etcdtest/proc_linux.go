package etcdtest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill the member process when the test
// process dies, so that a test binary killed at its timeout leaves no
// etcd running.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
