package main

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// The capabilities the provider gives a sandbox (CapDrop ALL, then these):
// only a keeper ever holds them. Numbers from linux/capability.h.
const (
	capKill    = 5
	capSetgid  = 6
	capSetuid  = 7
	capSetpcap = 8
	// capLastCap bounds the bounding-set drop; PR_CAPBSET_READ of a cap the
	// kernel does not know is EINVAL, which ends the loop early.
	capLastCap = 63
)

const (
	prCapbsetRead = 23
	prCapbsetDrop = 24
	prSetKeepcaps = 8
	prSetDumpable = 4
	capVersion3   = 0x20080522
)

// identity is who the keeper was started as: what the command runs as.
type identity struct {
	uid, gid int
	groups   []int
}

// protect makes this keeper unreachable from the sandbox's own processes,
// which run as root without capabilities:
//   - it switches to KeeperUID: a signal needs the sender's uid to match
//     the target's, or CAP_KILL;
//   - it is non-dumpable and keeps capabilities they lack: /proc/PID/fd,
//     /proc/PID/mem and ptrace need both a dumpable target and a tracer
//     whose capabilities cover the target's;
//   - it empties its capability bounding set, so whatever it starts later
//     as root gains no capability at execve.
//
// keep are the capabilities it goes on holding (effective and permitted),
// on every thread: Go runs goroutines on any thread, and credentials are
// per thread (syscall.AllThreadsSyscall, the keeper is built without cgo).
// ok is false when the keeper was not started as root with the
// capabilities to do so (an image whose USER is not root): it then runs
// unprotected, as before, and says so to the caller.
func protect(keep ...uint) (id identity, ok bool, err error) {
	id = identity{uid: os.Getuid(), gid: os.Getgid()}
	if id.groups, err = os.Getgroups(); err != nil {
		return id, false, fmt.Errorf("getgroups: %w", err)
	}
	if id.uid != 0 || !hasCaps(capKill, capSetgid, capSetuid, capSetpcap) {
		return id, false, nil
	}
	if err := allThreads(syscall.SYS_PRCTL, prSetKeepcaps, 1, 0); err != nil {
		return id, false, fmt.Errorf("PR_SET_KEEPCAPS: %w", err)
	}
	// Only what the set holds (the sandbox's four, normally): each drop
	// stops every thread, and there are 41 capabilities to ask about.
	for c := uintptr(0); c <= capLastCap; c++ {
		in, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetRead, c, 0)
		if e == syscall.EINVAL {
			break // past the kernel's last capability
		}
		if e != 0 || in == 0 {
			continue
		}
		if err := allThreads(syscall.SYS_PRCTL, prCapbsetDrop, c, 0); err != nil {
			return id, false, fmt.Errorf("PR_CAPBSET_DROP %d: %w", c, err)
		}
	}
	// Groups, then gids, then uids: each needs a capability the next one
	// would not drop, and all three apply to every thread.
	if err := syscall.Setgroups([]int{}); err != nil {
		return id, false, fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setresgid(keeperproto.KeeperUID, keeperproto.KeeperUID, keeperproto.KeeperUID); err != nil {
		return id, false, fmt.Errorf("setresgid: %w", err)
	}
	if err := syscall.Setresuid(keeperproto.KeeperUID, keeperproto.KeeperUID, keeperproto.KeeperUID); err != nil {
		return id, false, fmt.Errorf("setresuid: %w", err)
	}
	if err := setCaps(keep...); err != nil {
		return id, false, err
	}
	// The uid change already made it non-dumpable (suid_dumpable is 0);
	// say so explicitly rather than rely on a sysctl.
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); e != 0 {
		return id, false, fmt.Errorf("PR_SET_DUMPABLE: %w", e)
	}
	return id, true, nil
}

// setCaps makes keep the effective and permitted sets of every thread, and
// clears the inheritable set, which clears the ambient set with it (ambient
// capabilities must be both permitted and inheritable).
func setCaps(keep ...uint) error {
	var mask [2]uint32
	for _, c := range keep {
		mask[c/32] |= 1 << (c % 32)
	}
	hdr := struct {
		version uint32
		pid     int32
	}{version: capVersion3}
	data := [2]struct{ effective, permitted, inheritable uint32 }{
		{mask[0], mask[0], 0}, {mask[1], mask[1], 0},
	}
	// Called directly, not through allThreads: only a pointer converted in
	// the call to the syscall itself is kept valid (unsafe.Pointer rule 4).
	if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data)), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}

// hasCaps reports whether this thread holds every one of caps, effective.
func hasCaps(caps ...uint) bool {
	hdr := struct {
		version uint32
		pid     int32
	}{version: capVersion3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data)), 0); e != 0 {
		return false
	}
	for _, c := range caps {
		if data[c/32].effective&(1<<(c%32)) == 0 {
			return false
		}
	}
	return true
}

func allThreads(trap, a1, a2, a3 uintptr) error {
	if _, _, e := syscall.AllThreadsSyscall(trap, a1, a2, a3); e != 0 {
		return e
	}
	return nil
}
