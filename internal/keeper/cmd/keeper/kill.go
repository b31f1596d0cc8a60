package main

import "syscall"

// killOthers is "exclusive": every process of every other exec dies first.
// With marks one sweep finds them all, and the processes of execs that
// already ended too.
func (s *server) killOthers(self *execState) {
	s.mu.Lock()
	var others []*execState
	for _, ex := range s.execs {
		if ex != self {
			others = append(others, ex)
		}
	}
	s.mu.Unlock()
	if !s.protected {
		for _, ex := range others {
			ex.kill()
		}
		return
	}
	for _, ex := range others {
		ex.killed.Store(true)
	}
	killMarked(anyMark)
}

// kill kills the exec's whole tree while its main process runs (once;
// later calls wait for nothing).
func (ex *execState) kill() {
	ex.killOnce.Do(func() {
		select {
		case <-ex.done:
			// It ended by itself: what it left running (a service started in
			// the background) is not its tree any more and lives on.
			return
		default:
		}
		ex.killed.Store(true)
		if ex.mark != 0 {
			killMarked(hasMark(ex.mark))
			return
		}
		_ = syscall.Kill(ex.pid, syscall.SIGSTOP)
		killTree(ex.pid)
		_ = syscall.Kill(ex.pid, syscall.SIGKILL)
	})
}
