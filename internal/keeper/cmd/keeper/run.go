package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

const prSetChildSubreaper = 36

// run starts argv as its child and waits for it. The child runs as the
// exec was started (root, the image's groups) plus the run's mark, with no
// capability; the keeper itself, protected, goes on as KeeperUID. Its exit
// code is the child's (128+n for signal n); after a kill it is
// KilledExitCode. The exec's main process, as Docker sees it, is the
// keeper, so the exec counts as done the moment the child exits, whatever
// background descendants still hold stdout.
func run(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	token := fs.String("token", "", "identifies this run to 'keeper kill'; its mark derives from it")
	cwd := fs.String("cwd", "", "working directory")
	withStdin := fs.Bool("stdin", false, "give the child the data frames as stdin")
	exclusive := fs.Bool("exclusive", false, "kill every process of every other exec before starting")
	deadlineMS := fs.Int64("deadline-ms", 0, "kill the tree after this many milliseconds")
	envStdin := fs.Bool("env-stdin", false, "read the child's environment from env frames first (env.go)")
	withRelay := fs.Bool("relay", false, "copy the child's output through pipes and end after it exited (relay.go)")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		status("err", keeperproto.KindInvalidRequest, "keeper run: bad arguments")
		return 2
	}
	argv := fs.Args()
	env := os.Environ()
	if *envStdin {
		extra, err := readEnvFrames(os.Stdin)
		if err != nil {
			status("err", keeperproto.KindInvalidRequest, "keeper run: env frames: "+err.Error())
			return 2
		}
		env = mergeEnv(env, extra)
		// PATH lookups (lookPath, in enter) see the child's PATH.
		for _, kv := range extra {
			if k, v, ok := strings.Cut(kv, "="); ok && k == "PATH" {
				os.Setenv("PATH", v)
			}
		}
	}

	// As a subreaper, orphans of the exec (a daemonized grandchild, a
	// setsid'd shell) are reparented to the keeper instead of to init, so
	// they are reaped here; the kill finds them by their mark.
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		status("err", keeperproto.KindInternal, "keeper: prctl(PR_SET_CHILD_SUBREAPER): "+e.Error())
		return 126
	}
	// The work directory and the executable are checked with the exec's
	// own rights, before the keeper gives them up.
	bin, code := enter(*cwd, argv[0])
	if code != 0 {
		return code
	}
	// Then at once, before the command exists: from here on no process of
	// the sandbox can signal, trace or open this one.
	id, protected, err := protect(capKill, capSetuid, capSetgid)
	if err != nil {
		status("err", keeperproto.KindInternal, "keeper: "+err.Error())
		return 126
	}
	mark, code := markOf(*token, protected, *exclusive)
	if code != 0 {
		return code
	}
	childIn, feed, err := childStdin(*withStdin)
	if err != nil {
		status("err", keeperproto.KindInternal, "keeper: stdin: "+err.Error())
		return 126
	}
	// One P: a second one only adds spinning threads, which would count
	// against the pids limit too.
	runtime.GOMAXPROCS(1)
	killer := newTreeKiller(func() { killTree(os.Getpid()) })
	if protected {
		killer = newTreeKiller(func() { killMarked(hasMark(mark)) })
	}
	if *exclusive {
		killMarked(anyMark)
	}
	// Before the threads are counted: os/signal's first Notify gives the
	// runtime a goroutine locked to a thread of its own for good, a thread
	// made late (after "ok") unless it is made now.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() { <-sigs; killer.trigger() }()
	reserveThreads(runThreads)
	status("ok", fmt.Sprint(oomKills()), "")

	// Its own process group, so "kill 0" in the exec cannot hit the
	// keeper (which it could not signal anyway once protected).
	sys := &syscall.SysProcAttr{Setpgid: true}
	if protected {
		// Back to who the exec was started as, plus the mark. The keeper's
		// bounding set is empty, so the command gains no capability at
		// execve and can never drop the mark.
		sys.Credential = &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid), Groups: withMark(id.groups, mark)}
	}
	files := []*os.File{childIn, os.Stdout, os.Stderr}
	var rl *childRelay
	if *withRelay {
		if rl, err = newChildRelay(); err != nil {
			fmt.Fprintf(os.Stderr, "resident: exec %q: output pipes: %v\n", argv[0], err)
			return 126
		}
		files[1], files[2] = rl.outW, rl.errW
	}
	proc, err := os.StartProcess(bin, argv, &os.ProcAttr{
		Env:   env,
		Files: files,
		Sys:   sys,
	})
	childIn.Close()
	if rl != nil {
		rl.started()
	}
	if errors.Is(err, syscall.EAGAIN) {
		// Another exec took the last pid between our "ok" and this fork.
		fmt.Fprintf(os.Stderr, "resident: exec %q: the sandbox is at its pids limit (%v)\n", argv[0], err)
		return 126
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "resident: exec %q: %v\n", argv[0], err)
		return 126
	}
	go control(os.Stdin, feed, killer)
	if *deadlineMS > 0 {
		time.AfterFunc(time.Duration(*deadlineMS)*time.Millisecond, killer.trigger)
	}
	go killer.loop()

	code = reap(proc.Pid)
	killed := killer.wait()
	if rl != nil {
		rl.drain()
	}
	if killed {
		return keeperproto.KilledExitCode
	}
	return code
}

// reap waits for the main child, reaping every orphan the subreaper gets on
// the way so none lingers as a zombie.
func reap(child int) int {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 126 // ECHILD: nothing left, cannot happen before the child
		}
		if pid != child {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// status writes the one status line the provider waits for. It goes out
// before the child exists, so it always precedes the child's output.
func status(word, a, b string) {
	line := keeperproto.StatusPrefix + word + " " + a
	if b != "" {
		line += " " + strings.ReplaceAll(b, "\n", " ")
	}
	_, _ = os.Stdout.WriteString(line + "\n")
}
