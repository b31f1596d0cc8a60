package main

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// openPTY opens a new pseudo-terminal of the given size: the master for
// the keeper, the slave for the command (its stdin, stdout, stderr and
// controlling terminal). Plain ioctls: a dependency would earn nothing.
func openPTY(size keeperproto.WindowSize) (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	var n uint32
	if err := ioctl(master, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("TIOCGPTN: %w", err)
	}
	var unlock int32
	if err := ioctl(master, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("TIOCSPTLCK: %w", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	if err := setWinsize(master, size); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// setWinsize is Resize: TIOCSWINSZ, which also sends the command SIGWINCH.
func setWinsize(master *os.File, size keeperproto.WindowSize) error {
	ws := struct{ rows, cols, x, y uint16 }{size.Rows, size.Cols, 0, 0}
	if err := ioctl(master, syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); err != nil {
		return fmt.Errorf("TIOCSWINSZ: %w", err)
	}
	return nil
}

// ioctl goes through the file's raw descriptor without Fd, which would put
// it back in blocking mode and out of the poller.
func ioctl(f *os.File, req, arg uintptr) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, arg)
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
