package main

import (
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// The exit of an exec whose tree kill is under way waits for the kill to
// end: the main process dies first (the kill's first round), and an Exit
// sent then would let the host see processes of the exec still alive.
func TestExitWaitsForTheTreeKill(t *testing.T) {
	s := newServerState()
	ex := &execState{s: s, id: "x", done: make(chan struct{})}
	s.execs[ex.id] = ex
	if !ex.killBegins() { // a kill under way
		t.Fatal("a running exec refused a kill")
	}
	ex.killed.Store(true)
	exited := make(chan syscall.WaitStatus, 1)
	exited <- syscall.WaitStatus(syscall.SIGKILL) // its main process died of it
	go ex.await(exited)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-ex.done:
			t.Fatal("the exec ended while its tree kill was under way")
		default:
		}
		ex.killsMu.Lock()
		waiting := ex.killsAwaited
		ex.killsMu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("await never came to wait for the kill")
		}
		time.Sleep(time.Millisecond)
	}
	ex.killEnds()
	<-ex.done
	if !ex.exit.Killed || ex.exit.Code != 137 {
		t.Fatalf("exit %+v", ex.exit)
	}
	if ex.killBegins() {
		t.Fatal("a kill began after the exec's end")
	}
}

func newServerState() *server {
	return &server{streams: map[uint32]stream{}, execs: map[string]*execState{}, reserved: map[string]bool{}}
}

// An exec with stdin that fails to start leaves no goroutine feeding it.
func TestFailedStartLeavesNoStdinFeed(t *testing.T) {
	s := newServerState()
	// Stopped at the end: a reaper left running would reap the children of the
	// tests after this one (and of this one run again with -count).
	s.reaper = newReaper()
	t.Cleanup(s.reaper.stop)
	s.self = "/bin/true" // the probe then says nothing: an internal failure
	before := goleak.IgnoreCurrent()
	ex, fail := s.spawn(keeperproto.Exec{Argv: []string{"/nonexistent/program"}, Stdin: true})
	if fail == nil || ex != nil {
		t.Fatalf("a missing program started: %+v", ex)
	}
	goleak.VerifyNone(t, before)
}
