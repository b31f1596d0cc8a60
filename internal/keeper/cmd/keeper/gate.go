package main

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
)

// A serving keeper runs on one P (GOMAXPROCS 1) and makes every OS thread
// it will ever need at start (reserveThreads): threads count against the
// sandbox's pids limit, and a Go runtime that cannot make one dies
// ("failed to create new OS thread"), taking the sandbox's init with it.
// With one P the runtime makes a thread only when a goroutine sits in a
// system call long enough for sysmon to hand the P to another thread and
// no idle thread is left. So the keeper bounds how many goroutines can be
// in a system call at once, and keeps that many threads:
//
//   - one each for the goroutines that block in a call by design: the
//     channel's reader (stdin or a socket, with the file operations it
//     sets up), its writer (peer.send, under its lock), a write to
//     stderr, the reaper's wait4 (os/signal's receiver has its own
//     thread already when the threads are made, blocked for good);
//   - one for the exec being started (spawnMu: starts are one at a time,
//     forks were already), one for the tree kill running (killMu);
//   - gateSlots for every other read and write of an exec's or a helper's
//     pipes (sysGate), whatever the number of execs;
//   - the one running Go code, and spares for the short calls left
//     (close, a deadline), which a stalled thread can also make long.
//
// No thread per exec: 100 streaming execs need no more than one.
const (
	gateSlots    = 2
	spareThreads = 2
	serveThreads = 4 + 2 + gateSlots + 1 + spareThreads
)

var (
	// sysGate bounds the goroutines inside a read or write of a pipe.
	sysGate = make(chan struct{}, gateSlots)
	// spawnMu makes exec starts one at a time (each a sequence of calls:
	// the user's files, pipes, the fork, the probe on a failure).
	spawnMu sync.Mutex
	// killMu makes tree kills one at a time (each a scan of /proc and
	// kills until none is left).
	killMu sync.Mutex
)

func gateEnter() { sysGate <- struct{}{} }
func gateLeave() { <-sysGate }

// gatedRead reads f (a pipe or terminal the runtime polls) with the read
// call itself inside the gate: waiting for data holds no slot. io.EOF at
// the end; os.ErrDeadlineExceeded past f's read deadline.
func gatedRead(f *os.File, p []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		gateEnter()
		for {
			n, rerr = syscall.Read(int(fd), p)
			if rerr != syscall.EINTR {
				break
			}
		}
		gateLeave()
		return rerr != syscall.EAGAIN
	})
	if err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, &os.PathError{Op: "read", Path: f.Name(), Err: rerr}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// gatedWrite writes all of p to f the same way.
func gatedWrite(f *os.File, p []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	written := 0
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			gateEnter()
			n, e := syscall.Write(int(fd), p[written:])
			gateLeave()
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				return false
			case e != nil:
				werr = e
				return true
			}
			written += n
		}
		return true
	})
	if err != nil {
		return written, err
	}
	if werr != nil {
		return written, &os.PathError{Op: "write", Path: f.Name(), Err: werr}
	}
	return written, nil
}

// gatedReader is an io.Reader of f through the gate.
type gatedReader struct{ f *os.File }

func (r gatedReader) Read(p []byte) (int, error) {
	n, err := gatedRead(r.f, p)
	if errors.Is(err, os.ErrClosed) {
		return n, io.EOF
	}
	return n, err
}
