//go:build linux

// Package netns dials a connection inside another process's network
// namespace: one locked thread enters the namespace of the process a pidfd
// holds, opens the socket, and goes back. A socket belongs to the
// namespace it was made in, so once made it works from any thread; no
// process, no copy. Entering takes CAP_SYS_ADMIN over the namespace
// (root); without it Dial says ErrCannotEnter and the caller takes
// another path.
package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"

	"golang.org/x/sys/unix"
)

// ErrCannotEnter says the namespace cannot be entered from here (no
// privilege over it, or not a namespace setns takes): not a failure of
// the connection, a reason to take another path.
var ErrCannotEnter = errors.New("netns: cannot enter the network namespace")

// Dup is a new close-on-exec descriptor of pidfd, for a Dial that must not
// race a close of the original.
func Dup(pidfd int) (int, error) {
	return unix.FcntlInt(uintptr(pidfd), unix.F_DUPFD_CLOEXEC, 0)
}

// Dial dials address in the network namespace of the process pidfd holds.
// A thread that cannot go back to its own namespace stays locked and ends
// with its goroutine, as the runtime does with a locked thread, so no
// other goroutine ever runs in the sandbox's namespace.
func Dial(ctx context.Context, pidfd int, network, address string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{err: fmt.Errorf("%w (%v)", ErrCannotEnter, err)}
			return
		}
		defer unix.Close(self)
		if err := unix.Setns(pidfd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
				err = fmt.Errorf("%w (setns: %v)", ErrCannotEnter, err)
			}
			done <- result{err: err}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, address)
		if unix.Setns(self, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{conn: c}
	}()
	r := <-done
	return r.conn, r.err
}
