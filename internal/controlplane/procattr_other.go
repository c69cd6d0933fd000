//go:build !linux

package controlplane

import "syscall"

// childProcAttr returns nil: only Linux can tie a child's life to its parent's.
func childProcAttr() *syscall.SysProcAttr {
	return nil
}
