package main

import (
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// An exec that ended by itself has no tree left to kill: a late kill (its
// channel ending after the exit) leaves the service it started running.
func TestKillAfterTheExitSparesItsService(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a process a mark")
	}
	mark, _ := keeperproto.Mark("abcdef0123")
	service := exec.Command("sleep", "1000")
	service.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{mark}}}
	if err := service.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = service.Process.Kill()
		_ = service.Wait()
	})
	ex := &execState{mark: mark, pid: service.Process.Pid, done: make(chan struct{})}
	close(ex.done) // the exec's main process ended by itself
	ex.kill()
	if live, _ := procGroups(service.Process.Pid); !live {
		t.Fatal("the service of an exec that had exited was killed")
	}
}
