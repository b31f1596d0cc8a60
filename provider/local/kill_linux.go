//go:build linux

package local

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/resident-dev/resident/internal/procfs"
)

// procInfo is one line of the process table (internal/procfs, the parser
// the keeper shares).
type procInfo struct {
	pid, ppid, pgid int
	start           uint64 // clock ticks after boot: tells a reused pid apart
	zombie          bool
}

func readProc(pid int) (procInfo, bool) {
	st, ok := procfs.ReadStat(pid)
	if !ok {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: st.PPID, pgid: st.PGID, start: st.Start, zombie: st.Zombie()}, true
}

func snapshot() map[int]procInfo {
	procs := map[int]procInfo{}
	for _, pid := range procfs.PIDs() {
		if pi, ok := readProc(pid); ok {
			procs[pid] = pi
		}
	}
	return procs
}

func startTime(pid int) uint64 {
	pi, _ := readProc(pid)
	return pi.start
}

// cwdWithin reports whether the process works inside dir. The link reads
// "<path> (deleted)" once the directory is gone.
func (pi procInfo) cwdWithin(dir string) bool {
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pi.pid) + "/cwd")
	if err != nil {
		return false
	}
	cwd = strings.TrimSuffix(cwd, " (deleted)")
	return cwd == dir || strings.HasPrefix(cwd, dir+"/")
}

// fileID names a directory whatever path it is seen through.
type fileID struct{ dev, ino uint64 }

// dirID is dir's fileID; ok is false when it cannot be read.
func dirID(dir string) (id fileID, ok bool) {
	var st syscall.Stat_t
	if syscall.Stat(dir, &st) != nil {
		return fileID{}, false
	}
	return fileID{dev: st.Dev, ino: st.Ino}, true
}

// rootIs reports whether the process's root directory is the directory
// id names. An isolated exec's processes all have the sandbox root as
// their root, wherever they work: /proc shows their working directory in
// the sandbox's own terms, so cwdWithin cannot find them.
func (pi procInfo) rootIs(id fileID, ok bool) bool {
	if !ok {
		return false
	}
	got, found := dirID("/proc/" + strconv.Itoa(pi.pid) + "/root")
	return found && got == id
}

// inSandbox matches the processes of the sandbox whose directory is dir:
// by working directory (unisolated), root directory (isolated), or the
// process groups this instance started.
func inSandbox(dir string, groups map[int]uint64) func(procInfo) bool {
	root, ok := dirID(dir + "/" + rootDir)
	return func(pi procInfo) bool { return pi.cwdWithin(dir) || pi.inGroup(groups) || pi.rootIs(root, ok) }
}

// killWhere SIGKILLs every live process that match selects, and all their
// descendants, including those that left the process group with setsid. It
// first stops them and re-reads the table until no new process appears, so
// nothing can fork its way out between the snapshot and the kill. A child
// whose parent already died was re-parented away and is found only if match
// selects it itself (Terminate matches by working directory for that).
func killWhere(match func(procInfo) bool) {
	self := os.Getpid()
	stopped := map[int]bool{}
	for round := 0; round < 50; round++ {
		procs := snapshot()
		children := map[int][]int{}
		var queue []int
		for _, pi := range procs {
			if pi.zombie || pi.pid == self || pi.pid == 1 {
				continue
			}
			children[pi.ppid] = append(children[pi.ppid], pi.pid)
			if stopped[pi.pid] || match(pi) {
				queue = append(queue, pi.pid)
			}
		}
		grew := false
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if !stopped[pid] {
				stopped[pid] = true
				grew = true
				_ = syscall.Kill(pid, syscall.SIGSTOP)
			}
			for _, c := range children[pid] {
				if !stopped[c] {
					queue = append(queue, c)
				}
			}
		}
		if !grew {
			break
		}
	}
	for pid := range stopped {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// waitExit blocks until pid has exited without reaping it (WNOWAIT): until
// the reap, the pid and its process group id cannot be reused, so killTree
// may still signal them.
func waitExit(pid int) {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGSTOP: "SIGSTOP", syscall.SIGTSTP: "SIGTSTP", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}

func signalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// inGroup reports whether the process belongs to one of a sandbox's process
// groups. A group id is a pid; if a process with that pid lives but started
// at another time, the id was reused by someone else's group.
func (pi procInfo) inGroup(groups map[int]uint64) bool {
	start, ok := groups[pi.pgid]
	if !ok {
		return false
	}
	leader, alive := readProc(pi.pgid)
	return !alive || leader.start == start
}

// oDirectory makes opening a directory fail on anything else.
const oDirectory = syscall.O_DIRECTORY
