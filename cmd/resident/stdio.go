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
func claimStdout() (*os.File, error) {
	fd, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("claim stdout: %w", err)
	}
	if err := unix.Dup3(2, 1, 0); err != nil {
		return nil, fmt.Errorf("claim stdout: point fd 1 at stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "frames"), nil
}

// stdio is the host stream: frames in on stdin, out on the claimed fd.
type stdio struct {
	in  *os.File
	out *os.File
}

func (s stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s stdio) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s stdio) Close() error                { return errors.Join(s.in.Close(), s.out.Close()) }
