package main

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// shutdown is ChanShutdown: the sandbox ends on the keeper's word. Only as
// the sandbox's init (pid 1 of its own namespace, where kill(-1) reaches
// the sandbox and nothing else) and protected (root's CAP_KILL: every
// process of the sandbox can be signalled). Every other process is killed
// and reaped before the Result, so the holder knows none is left; then
// the keeper exits and the engine records the container's stop behind
// the holder's answer. A refusal leaves the keeper serving: the holder
// stops the sandbox through the engine.
func (s *server) shutdown(l link) {
	if s.issued != nil || !s.protected {
		l.fail(keeperproto.KindInvalidRequest, "", "shutdown: the keeper is not the protected init of the sandbox")
		return
	}
	killMu.Lock() // no tree kill scans /proc meanwhile (gate.go)
	left := killEveryone(time.Now().Add(keeperproto.ShutdownWait), s.reaper)
	killMu.Unlock()
	if left != nil {
		l.fail(keeperproto.KindTransient, "", "shutdown: "+left.Error())
		return
	}
	// The execs' Exits, sent as each one's output ends, come first where
	// they can: their processes are gone, so this waits for their pipes.
	s.mu.Lock()
	var execs []*execState
	for _, ex := range s.execs {
		execs = append(execs, ex)
	}
	s.mu.Unlock()
	wait := time.NewTimer(time.Second)
	defer wait.Stop()
	for _, ex := range execs {
		select {
		case <-ex.done:
		case <-wait.C:
		}
	}
	l.result(keeperproto.Result{})
	os.Exit(0)
}

// killEveryone sends SIGKILL to every process the keeper may signal (as
// pid 1, every other one of its namespace) until none is left, reaping
// as it goes (a zombie still counts for kill(2)); an error names what is
// left by the deadline.
func killEveryone(deadline time.Time, r *reaper) error {
	for {
		err := syscall.Kill(-1, syscall.SIGKILL)
		r.reapAll()
		if errors.Is(err, syscall.ESRCH) {
			return nil // nobody left to signal
		}
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("processes of the sandbox are still there after SIGKILL")
		}
		time.Sleep(200 * time.Microsecond)
	}
}
