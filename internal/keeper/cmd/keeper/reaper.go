package main

import (
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// reaper is the one place a serving keeper waits for children. As the
// sandbox's init (or its subreaper) it inherits every orphan of every
// exec, so it must reap whatever exits, not only its own children; a
// per-child wait would race a wait for any. A child is started under the
// reaper's lock (start), so its exit always finds its waiter; an exit
// nobody waits for is an orphan's, reaped and forgotten.
type reaper struct {
	mu      sync.Mutex
	waiters map[int]chan syscall.WaitStatus
	// oom raises every child's OOM score over the keeper's (oomscore.go);
	// nil leaves children at the keeper's.
	oom  *oomScore
	sigs chan os.Signal
}

func newReaper() *reaper {
	r := &reaper{waiters: map[int]chan syscall.WaitStatus{}, sigs: make(chan os.Signal, 1)}
	signal.Notify(r.sigs, syscall.SIGCHLD)
	go func() {
		for range r.sigs {
			r.reapAll()
		}
	}()
	return r
}

// stop ends the reaping. A keeper never stops its reaper; a test must, since
// one left running reaps any child of the process, other tests' included.
func (r *reaper) stop() {
	signal.Stop(r.sigs)
	close(r.sigs)
}

// start runs fork (which starts one child) and registers the child: the
// channel gets its wait status once.
func (r *reaper) start(fork func() (int, error)) (int, <-chan syscall.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pid, err := r.oom.around(fork)
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan syscall.WaitStatus, 1)
	r.waiters[pid] = ch
	return pid, ch, nil
}

// reapAll collects every child that has exited. SIGCHLD coalesces, so one
// signal may stand for many exits.
func (r *reaper) reapAll() {
	for {
		var ws syscall.WaitStatus
		r.mu.Lock()
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == nil && pid > 0 {
			if ch, ok := r.waiters[pid]; ok {
				delete(r.waiters, pid)
				ch <- ws
			}
		}
		r.mu.Unlock()
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
