//go:build linux

package controlplane

import "syscall"

// childProcAttr makes the kernel kill a component when the test process dies without calling
// Stop (a panic, a timeout, SIGKILL), so no orphaned apiserver keeps ports and CPU.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
