package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/internal/procfs"
)

// treeKiller kills every process of the exec once triggered, from
// whichever path triggers first (kill frame, deadline, lost connection,
// signal, a corrupted control frame). The keeper exits only after they are
// gone. kill is killMarked for the exec's mark, or, in a keeper that could
// not protect itself (no marks), killTree below the keeper.
type treeKiller struct {
	once  sync.Once
	kill  func()
	start chan struct{}
	done  chan struct{}
}

func newTreeKiller(kill func()) *treeKiller {
	return &treeKiller{kill: kill, start: make(chan struct{}), done: make(chan struct{})}
}

func (k *treeKiller) trigger() { k.once.Do(func() { close(k.start) }) }

func (k *treeKiller) loop() {
	<-k.start
	k.kill()
	close(k.done)
}

// wait reports whether a kill was triggered and, if so, waits for it.
func (k *treeKiller) wait() bool {
	select {
	case <-k.start:
		<-k.done
		return true
	default:
		return false
	}
}

// killTree stops and kills every live descendant of root until none is
// left: the kill of a keeper without marks (see protect). Stopping first
// keeps a forking process from adding children between the listing and
// the kill; each round catches what the last one missed. Orphans stay in
// the tree (root is a subreaper) and setsid changes nothing about
// parentage, but a process that kills root (an unprotected keeper can be
// killed) takes its descendants out of reach: marks have no such hole.
func killTree(root int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := descendants(root)
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGSTOP)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// descendants lists the live (non-zombie) processes below root, from /proc
// of the sandbox's own pid namespace.
func descendants(root int) []int {
	children := map[int][]int{}
	live := map[int]bool{}
	for _, pid := range procfs.PIDs() {
		st, ok := procfs.ReadStat(pid)
		if !ok {
			continue
		}
		children[st.PPID] = append(children[st.PPID], pid)
		live[pid] = !st.Zombie()
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if live[c] {
				out = append(out, c)
			}
			queue = append(queue, c)
		}
	}
	return out
}

// killCmd finds the "run" keeper started with -token T and kills its tree,
// and every process carrying the run's mark (even once that keeper is
// gone): the fallback when the kill frame cannot reach it.
func killCmd(args []string) int {
	if _, _, err := protect(capKill); err != nil {
		fmt.Fprintln(os.Stderr, "keeper kill:", err)
		return 1
	}
	fs := flag.NewFlagSet("kill", flag.ContinueOnError)
	token := fs.String("token", "", "the run to kill")
	if err := fs.Parse(args); err != nil || *token == "" {
		return 2
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 1
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !isRun(cmdline, *token) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
		killTree(pid)
	}
	if mark, ok := keeperproto.Mark(*token); ok {
		killMarked(hasMark(mark))
	}
	return 0
}

func isRun(cmdline []byte, token string) bool {
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	if len(args) < 4 || string(args[1]) != "run" {
		return false
	}
	for i := 2; i+1 < len(args); i++ {
		if string(args[i]) == "--" {
			return false
		}
		if string(args[i]) == "-token" && string(args[i+1]) == token {
			return true
		}
	}
	return false
}
