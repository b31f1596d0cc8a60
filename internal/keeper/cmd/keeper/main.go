// Command keeper is the static helper the Docker provider puts into every
// sandbox (read-only, at keeperproto.Path) and into its store helper image.
// It exists because the Engine API cannot do four things a sandbox needs,
// and an arbitrary image may have no shell or coreutils to do them with:
//
//   - serve: the sandbox's init and its one channel (serve.go): every exec,
//     its stdin, output, signals, resize and exit status, detached execs
//     and file operations, multiplexed over stdin/stdout (an attach
//     stream) or each connection to an inherited listening socket; the
//     file helpers it runs as the operation's user are write, read, list,
//     and probe explains a start that failed;
//   - alive: a long-running command with an optional lifetime, so the
//     sandbox stops by itself even when the resident is gone;
//   - run: start one exec with its mark (a group no command can drop), so
//     every process the exec spawns (daemonized, orphaned or not) can be
//     found and killed, and report "started" or a clean start error before
//     any output; from a uid of its own that no command can signal;
//   - kill: kill such an exec from a second exec (the fallback path);
//   - ls / cat: browse a mounted volume without following any symlink
//     (internal/beneath), for the store, and end with the request that
//     asked (-lease: stdin's end);
//   - put: write a file as the sandbox's own user (write_file), which the
//     engine's archive API, writing as the engine's root, cannot;
//   - relay / proxy / attach: carry a forwarded port or an egress
//     connection over one exec's stdin and stdout (relay.go, proxy.go).
//
// It is built with CGO_ENABLED=0 and embedded by package keeperbin; see
// that package for how to rebuild it after editing this one.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: keeper serve|alive|run|kill|oom|ls|cat|put|install|relay|proxy|attach ...")
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case keeperproto.CmdAlive:
		alive(args)
	case keeperproto.CmdRun:
		os.Exit(run(args))
	case keeperproto.CmdKill:
		os.Exit(killCmd(args))
	case keeperproto.CmdOOM:
		mustProtect()
		fmt.Println(oomKills())
	case keeperproto.CmdLs:
		os.Exit(ls(args))
	case keeperproto.CmdCat:
		os.Exit(cat(args))
	case keeperproto.CmdPut:
		os.Exit(put(args))
	case keeperproto.CmdServe:
		os.Exit(serve(args))
	case cmdProbe:
		os.Exit(probe(args))
	case cmdWrite:
		os.Exit(writeHelper(args))
	case cmdRead:
		os.Exit(readHelper(args))
	case cmdList:
		os.Exit(listHelper(args))
	case keeperproto.CmdRelay, keeperproto.CmdAttach:
		os.Exit(carry(os.Args[1], args))
	case keeperproto.CmdProxy:
		os.Exit(proxy(args))
	case keeperproto.CmdInstall:
		os.Exit(install(args))
	default:
		fail("keeper: unknown command " + os.Args[1])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(2)
}

// mustProtect makes a keeper that needs no capability unreachable from the
// sandbox (see protect), holding none.
func mustProtect() {
	if _, _, err := protect(); err != nil {
		fail("keeper: " + err.Error())
	}
}

// alive keeps the sandbox's init (docker-init) busy: it is the container's
// command, protected (no process of the sandbox can signal it) and holding
// no capability. With a lifetime it exits 0 after that many seconds, which
// stops the container even if no resident is left to do it. It ignores
// every signal: docker-init forwards to it whatever it gets, and a process
// of the sandbox may signal docker-init (both are root), so a default
// action would let any command stop the sandbox. The engine stops the
// container with SIGKILL instead (its StopSignal, see create.go).
func alive(args []string) {
	mustProtect()
	signal.Ignore()
	secs := int64(0)
	if len(args) > 0 {
		n, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || n < 0 {
			fail("keeper alive: bad lifetime " + args[0])
		}
		secs = n
	}
	if secs == 0 {
		for {
			time.Sleep(24 * time.Hour)
		}
	}
	time.Sleep(time.Duration(secs) * time.Second)
	os.Exit(0)
}

// oomKills reads how many processes the kernel's OOM killer has killed in
// this container's memory cgroup: "oom_kill" in memory.events (cgroup v2)
// or memory.oom_control (v1). -1 when neither is readable. The provider
// compares the value before and after an exec that died of SIGKILL.
func oomKills() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		if n, ok := readCounter(p, "oom_kill"); ok {
			return n
		}
	}
	return -1
}

// oomKillsAfter reads the OOM count once an exec died by SIGKILL. The
// kernel counts a kill before it sends the signal, so one good read is
// enough; but the sandbox's memory cgroup can still be at its limit then
// (the victim's pages go as it exits), and opening the cgroup's file
// charges that cgroup: a read that fails is tried again for a while
// before the kill is left unexplained.
func oomKillsAfter(before int64) int64 {
	if before < 0 {
		return -1 // never readable here
	}
	n := int64(-1)
	for try := 0; try < 50 && n < 0; try++ {
		if try > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		gateEnter() // a file read (gate.go)
		n = oomKills()
		gateLeave()
	}
	return n
}

func readCounter(path, key string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == key {
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
