// Package procfs reads the fields of /proc/PID/stat that the resident's tree
// killers use (the keeper inside a sandbox and the local provider), so there
// is one parser of that file. It has no dependencies beyond the standard
// library: the keeper is a static binary built from it.
package procfs

import (
	"bytes"
	"os"
	"strconv"
)

// Stat is one process as /proc/PID/stat describes it.
type Stat struct {
	PID, PPID, PGID int
	State           byte   // R, S, D, Z, X, ...
	Start           uint64 // clock ticks after boot: tells a reused pid apart
}

// Zombie reports a process that has exited and waits to be reaped.
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// ReadStat reads pid's stat; ok is false when it is gone or unreadable.
func ReadStat(pid int) (Stat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	return parseStat(pid, data)
}

// parseStat counts fields from the last ')': the command name before it may
// hold spaces and parentheses of its own.
func parseStat(pid int, data []byte) (Stat, bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := bytes.Fields(data[i+1:])
	// state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime priority nice num_threads itrealvalue
	// starttime: starttime is the 20th field after the name.
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, false
	}
	s := Stat{PID: pid, State: f[0][0]}
	var err error
	if s.PPID, err = strconv.Atoi(string(f[1])); err != nil {
		return Stat{}, false
	}
	if s.PGID, err = strconv.Atoi(string(f[2])); err != nil {
		return Stat{}, false
	}
	if s.Start, err = strconv.ParseUint(string(f[19]), 10, 64); err != nil {
		return Stat{}, false
	}
	return s, true
}

// PIDs lists the processes /proc shows now.
func PIDs() []int {
	entries, _ := os.ReadDir("/proc")
	pids := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
