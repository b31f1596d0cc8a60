package main

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// claimStdout moves the protocol channel off fd 1: it returns a private,
// close-on-exec duplicate for frames and points fd 1 at stderr. Child
// processes and libraries that print to fd 1 then land in the log stream.
func claimStdout() (int, error) {
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return -1, fmt.Errorf("claim stdout: %w", err)
	}
	if err := unix.Dup3(2, 1, 0); err != nil {
		return -1, fmt.Errorf("claim stdout: point fd 1 at stderr: %w", err)
	}
	return fd, nil
}

// hostFile is fd as the host stream's file, on Go's poller when fd is a
// pipe or a socket (what a host spawns the resident with). Blocking, each
// read of the next request holds a thread in a syscall: the scheduler's
// monitor takes its P after 20 µs and wakes another thread, and the
// read's return has to get one back, a handoff and a wakeup on every
// request. Non-blocking, the reader parks like any goroutine. A terminal
// or a file is left blocking: its file description may be the shell's
// too, which must not turn non-blocking under it. The file's Fd must
// never be called: it makes a polled file blocking again.
func hostFile(fd int, name string) *os.File {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		if kind := st.Mode & unix.S_IFMT; kind == unix.S_IFIFO || kind == unix.S_IFSOCK {
			_ = unix.SetNonblock(fd, true) // refused: it stays blocking, which works
		}
	}
	return os.NewFile(uintptr(fd), name) // os polls an fd it finds non-blocking
}

// stdio is the host stream: frames in on stdin, out on the claimed fd.
type stdio struct {
	in  *os.File
	out *os.File
}

func (s stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s stdio) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s stdio) Close() error                { return errors.Join(s.in.Close(), s.out.Close()) }
