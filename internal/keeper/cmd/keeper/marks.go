package main

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// killMarked stops and kills every live process whose groups match, until
// a scan finds none. Stopping first keeps a fork loop from adding processes
// between the scan and the kill; each round catches what the last missed,
// and a child forked before its parent stopped carries the mark too. The
// mark is inherited by every descendant and cannot be dropped, so this
// finds the whole exec whatever it did to its ancestry (killed its parent,
// double-forked, setsid'd). It gives up after 10s (a pids limit bounds how
// many there can be, so that is far more than enough).
func killMarked(match func(gid uint32) bool) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := marked(match)
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGSTOP)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(time.Millisecond)
	}
}

// hasMark matches one exec's mark.
func hasMark(mark uint32) func(uint32) bool {
	return func(gid uint32) bool { return gid == mark }
}

// marked lists the live (non-zombie) processes of the sandbox's pid
// namespace with a supplementary group that matches.
func marked(match func(gid uint32) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if live, groups := procGroups(pid); live && anyGroup(groups, match) {
			out = append(out, pid)
		}
	}
	return out
}

func anyGroup(groups []uint32, match func(uint32) bool) bool {
	for _, g := range groups {
		if match(g) {
			return true
		}
	}
	return false
}

// procGroups reads the state and supplementary groups of pid from
// /proc/PID/status, which anyone may read, whatever the process's uid.
func procGroups(pid int) (live bool, groups []uint32) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false, nil
	}
	for line := range bytes.Lines(data) {
		key, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch string(key) {
		case "State":
			state := bytes.TrimSpace(value)
			live = len(state) > 0 && state[0] != 'Z' && state[0] != 'X'
		case "Groups":
			for _, f := range bytes.Fields(value) {
				if g, err := strconv.ParseUint(string(f), 10, 32); err == nil {
					groups = append(groups, uint32(g))
				}
			}
		}
	}
	return live, groups
}

// anyMark matches every exec's mark: what "exclusive" stops.
func anyMark(gid uint32) bool { return keeperproto.IsMark(gid) }
