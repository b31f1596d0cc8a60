package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ChildOOMScoreAdj is the oom_score_adj of everything a serving keeper
// starts: the most the kernel allows. The keeper is the sandbox's init, so
// the OOM killer taking it ends the sandbox; at an equal score the killer
// takes the process with the most memory, and once it has killed a hog
// whose pages are still going, the keeper can be that process (seen: a
// 32 MiB sandbox lost its keeper to the second kill, after tail's). At
// 1000 every command outranks the keeper by the sandbox's whole limit, in
// the sandbox's memory cgroup and on the machine: a sandbox's commands are
// the first the kernel kills when memory runs out anywhere.
const ChildOOMScoreAdj = 1000

// oomScore is the keeper's own /proc/self/oom_score_adj, opened before
// protect() makes the keeper non-dumpable (its /proc files then belong to
// root, and it could no longer open them). Raising a score needs no
// privilege and a process may come back down to the lowest score a
// privileged writer gave it; so the keeper raises its own score for the
// instant of a fork, the child inherits it, and the keeper comes back.
// Under the reaper's lock, so no two starts interleave.
type oomScore struct {
	f   *os.File
	own string // the score the keeper was started with
}

// openOOMScore is nil where the file cannot be had (no /proc) or the
// keeper already runs at the top: its children then keep its score.
func openOOMScore() *oomScore {
	f, err := os.OpenFile("/proc/self/oom_score_adj", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	buf := make([]byte, 16)
	n, err := f.ReadAt(buf, 0)
	own := strings.TrimSpace(string(buf[:max(n, 0)]))
	v, perr := strconv.Atoi(own)
	if (err != nil && n == 0) || perr != nil || v >= ChildOOMScoreAdj {
		f.Close()
		return nil
	}
	o := &oomScore{f: f, own: own}
	// Once up and back down now: a keeper that could not come back (the
	// kernel refusing the lower score) must find out before it serves.
	if !o.set(strconv.Itoa(ChildOOMScoreAdj)) {
		f.Close()
		return nil
	}
	if !o.set(own) {
		f.Close()
		return nil // left raised: there is no way back down, say nothing more
	}
	return o
}

func (o *oomScore) set(v string) bool {
	_, err := syscall.Pwrite(int(o.f.Fd()), []byte(v), 0)
	return err == nil
}

// around runs fork with the keeper's score raised, so that the child
// starts at ChildOOMScoreAdj.
func (o *oomScore) around(fork func() (int, error)) (int, error) {
	if o == nil {
		return fork()
	}
	o.set(strconv.Itoa(ChildOOMScoreAdj))
	defer o.set(o.own)
	return fork()
}
