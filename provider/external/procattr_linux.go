package external

import "syscall"

// childProcAttr puts the provider in its own process group (so a kill
// reaches its children too) and kills it when the resident dies.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
