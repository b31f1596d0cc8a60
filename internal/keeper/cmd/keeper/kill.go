package main

import (
	"maps"
	"sync"
	"syscall"
)

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
	var killing []*execState
	for _, ex := range others {
		if ex.killBegins() {
			ex.killed.Store(true)
			killing = append(killing, ex)
		}
	}
	sweep := s.sweepable()
	killMu.Lock()
	killMarked(sweep)
	killMu.Unlock()
	for _, ex := range killing {
		ex.killEnds()
	}
}

// sweepable is what an exclusive sweep kills. As a sandbox's init (pid 1
// of its own namespace) the keeper sees only its sandbox, and any mark is
// one of its execs', an earlier keeper's included. Anywhere else its
// /proc is a wider world's (a test, a misconfigured provider), whose
// marked processes are other sandboxes' execs: only the marks it issued
// itself are its own.
func (s *server) sweepable() func(gid uint32) bool {
	if s.issued == nil { // pid 1: newServer
		return anyMark
	}
	s.mu.Lock()
	issued := maps.Clone(s.issued)
	s.mu.Unlock()
	return func(gid uint32) bool { return issued[gid] }
}

// kill kills the exec's whole tree while its main process runs (once;
// later calls wait for nothing).
func (ex *execState) kill() {
	ex.killOnce.Do(func() {
		if !ex.killBegins() {
			// It ended by itself: what it left running (a service started in
			// the background) is not its tree any more and lives on.
			return
		}
		defer ex.killEnds()
		ex.killed.Store(true)
		killMu.Lock() // see gate.go
		defer killMu.Unlock()
		if ex.mark != 0 {
			killMarked(hasMark(ex.mark))
			return
		}
		_ = syscall.Kill(ex.pid, syscall.SIGSTOP)
		killTree(ex.pid)
		_ = syscall.Kill(ex.pid, syscall.SIGKILL)
	})
}

// killBegins counts a tree kill of the exec, unless the exec is over.
func (ex *execState) killBegins() bool {
	ex.killsMu.Lock()
	defer ex.killsMu.Unlock()
	select {
	case <-ex.done:
		return false
	default:
	}
	if ex.over {
		return false
	}
	ex.kills++
	return true
}

func (ex *execState) killEnds() {
	ex.killsMu.Lock()
	ex.kills--
	ex.killsCond().Broadcast()
	ex.killsMu.Unlock()
}

// killsCond is the condition of kills (under killsMu).
func (ex *execState) killsCond() *sync.Cond {
	if ex.killsUp == nil {
		ex.killsUp = sync.NewCond(&ex.killsMu)
	}
	return ex.killsUp
}

// killsOver waits for the tree kills under way and lets no other start:
// the exec's end (its Exit) follows the end of its tree.
func (ex *execState) killsOver() {
	ex.killsMu.Lock()
	defer ex.killsMu.Unlock()
	for ex.kills > 0 {
		ex.killsAwaited = true
		ex.killsCond().Wait()
	}
	ex.over = true
}
