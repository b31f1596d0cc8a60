//go:build linux

package local

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// evictTimeout bounds how long a kill waits for the sandbox's processes to
// die. SIGKILL is not refused, so only a process stuck in the kernel (an
// unreachable network file system) takes this long.
const evictTimeout = 10 * time.Second

var errNamespaceGone = errors.New("the pid namespace has already ended")

// pidNamespace is a sandbox's pid namespace, held through a pidfd of its
// pid 1 (the keeper). Killing that process makes the kernel kill every
// process in the namespace, and a pidfd never reaches a process that reused
// the pid: the namespace can be killed safely however long ago it was
// found, which is how Terminate and an ended lifetime stop everything.
type pidNamespace struct {
	mu    sync.Mutex // orders signals against close: a closed fd number may be reused
	pidfd int        // -1 once closed
}

// openNamespace takes hold of the namespace bwrap reported. The pid could
// have been reused between the report and the open, so the process held
// must be pid 1 of that very namespace; if it is not, the namespace ended.
func openNamespace(info namespaceInfo) (*pidNamespace, error) {
	fd, err := unix.PidfdOpen(info.InitPID, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, errNamespaceGone
		}
		return nil, fmt.Errorf("pidfd_open: %w", err)
	}
	ns := &pidNamespace{pidfd: fd}
	if info.PidNS != 0 {
		var st unix.Stat_t
		if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/pid", info.InitPID), &st); err != nil || st.Ino != info.PidNS {
			ns.close()
			return nil, errNamespaceGone
		}
	}
	return ns, nil
}

// kill SIGKILLs pid 1 and with it the whole namespace. It returns at once;
// awaitEnd tells when every process in it is gone.
func (ns *pidNamespace) kill() {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.pidfd >= 0 {
		_ = unix.PidfdSendSignal(ns.pidfd, unix.SIGKILL, nil, 0)
	}
}

// ended reports whether pid 1 has exited, which the kernel lets happen only
// once every other process of the namespace is gone.
func (ns *pidNamespace) ended() bool { return ns.awaitEnd(0) }

// awaitEnd waits up to d for the namespace to end.
func (ns *pidNamespace) awaitEnd(d time.Duration) bool {
	ns.mu.Lock()
	fd := ns.pidfd
	ns.mu.Unlock()
	if fd < 0 {
		return true
	}
	deadline := time.Now().Add(d)
	for {
		// A pidfd polls readable once its process exited. Polling under
		// mu would hold kill off for the whole wait, so poll in slices.
		ns.mu.Lock()
		if ns.pidfd < 0 {
			ns.mu.Unlock()
			return true
		}
		fds := []unix.PollFd{{Fd: int32(ns.pidfd), Events: unix.POLLIN}}
		wait := min(time.Until(deadline), 10*time.Millisecond)
		n, err := unix.Poll(fds, max(int(wait/time.Millisecond), 0))
		ns.mu.Unlock()
		if err == nil && n > 0 {
			return true
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
		if !time.Now().Before(deadline) {
			return false
		}
	}
}

func (ns *pidNamespace) close() {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.pidfd >= 0 {
		_ = unix.Close(ns.pidfd)
		ns.pidfd = -1
	}
}
