package main

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// execState is one command the keeper started: its process, how to kill
// its tree, and how it ended. A detached exec's output goes to its ring
// and it stays in server.execs after it ends, for Attach and ListExecs.
type execState struct {
	s       *server
	id      string
	argv    []string
	started time.Time
	detach  bool
	pid     int
	mark    uint32 // 0 in an unprotected keeper

	oomBefore int64
	killed    atomic.Bool
	timedOut  atomic.Bool
	killOnce  sync.Once
	// kills is the tree kills of this exec under way; once its main
	// process exited, await waits for them to finish before the exec
	// ends, so a host that sees the Exit never sees one of its processes
	// alive. over is set then: no kill starts after that.
	killsMu sync.Mutex
	kills   int
	killsUp *sync.Cond // killsCond
	over    bool
	// killsAwaited: the exec's end waited for a kill (tests look).
	killsAwaited bool

	stdin *inputQueue // nil without stdin
	tty   *os.File    // the pty master, nil without a terminal
	outs  []outPipe   // stdout and stderr (a terminal's one output)
	pumps sync.WaitGroup
	ring  *ring // detached only

	// done is closed once the main process exited, its output is all
	// read and exit is set.
	done chan struct{}
	exit keeperproto.Exit
}

// startExec registers the stream of an Exec request and starts the command
// on its own goroutine; Started or Failure follows on the stream.
func (s *server) startExec(l link, req keeperproto.Exec) stream {
	// Under s.mu (open): the id is taken now, or refused.
	if req.ID != "" {
		if _, inUse := s.execs[req.ID]; inUse || s.reserved[req.ID] {
			go l.sendJSON(keeperproto.ChanFailure, keeperproto.Failure{Kind: keeperproto.KindConflict, Reason: keeperproto.ReasonExists, Field: "id", Msg: "exec id " + req.ID + " is in use"})
			return nil
		}
		s.reserved[req.ID] = true
	}
	st := newExecStream(l, req.Window)
	go func() {
		spawnMu.Lock() // see gate.go
		ex, fail := s.spawn(req)
		spawnMu.Unlock()
		if req.ID != "" {
			s.mu.Lock()
			delete(s.reserved, req.ID)
			s.mu.Unlock()
		}
		if fail != nil {
			_ = l.sendJSON(keeperproto.ChanFailure, fail)
			s.closeStream(l, st)
			return
		}
		st.bind(ex)
		_ = l.sendJSON(keeperproto.ChanStarted, keeperproto.Started{ExecID: ex.id, Pid: ex.pid, Buffer: ex.ringSize()})
		if ex.detach {
			st.follow(0)
		} else {
			ex.pumpTo(st)
		}
	}()
	return st
}

// spawn starts the command: the user resolved, exclusive applied, the
// process forked as that user with the exec's mark, its deadline armed.
func (s *server) spawn(req keeperproto.Exec) (*execState, *keeperproto.Failure) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Field: "argv", Msg: "empty argv"}
	}
	who, err := resolveUser(req.User, s.id)
	if err != nil {
		return nil, &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Field: "user", Msg: err.Error()}
	}
	if !s.protected && req.User != "" && who.uid != s.id.uid {
		return nil, &keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Reason: keeperproto.ReasonPermissionDenied, Field: "user",
			Msg: fmt.Sprintf("user %q: this keeper runs unprotected as uid %d and cannot switch users", req.User, s.id.uid)}
	}
	ex := &execState{s: s, id: req.ID, argv: req.Argv, started: time.Now(), detach: req.Detach, done: make(chan struct{})}
	token := newExecID()
	if ex.id == "" {
		ex.id = token
	}
	if s.protected {
		ex.mark, _ = keeperproto.Mark(token) // never from a caller's id: marks must spread
		if s.issued != nil {
			s.mu.Lock()
			s.issued[ex.mark] = true
			s.mu.Unlock()
		}
	}
	if req.Detach {
		size := req.Buffer
		if size <= 0 {
			size = keeperproto.DefaultRing
		}
		ex.ring = newRing(min(size, keeperproto.MaxRing))
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if s.protected {
		// The keeper's bounding set is empty and no_new_privs is set, so the
		// command gains no capability at execve, as root or not, and can
		// never drop the mark.
		sys.Credential = &syscall.Credential{Uid: uint32(who.uid), Gid: uint32(who.gid), Groups: withMark(who.groups, ex.mark)}
	}
	bin, fail := s.resolveProgram(req, sys)
	if fail != nil {
		return nil, fail
	}
	files, parentEnds, fail := ex.plumb(req, sys)
	if fail != nil {
		ex.stopInput()
		return nil, fail
	}
	if req.Exclusive {
		s.killOthers(ex)
	}
	ex.oomBefore = oomKills()
	pid, exited, err := s.reaper.start(func() (int, error) {
		proc, err := os.StartProcess(bin, req.Argv, &os.ProcAttr{Dir: req.Cwd, Env: req.Env, Files: files, Sys: sys})
		if err != nil {
			return 0, err
		}
		pid := proc.Pid
		_ = proc.Release()
		return pid, nil
	})
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		for _, f := range parentEnds {
			f.Close()
		}
		ex.stopInput()
		return nil, s.explain(req, sys, err)
	}
	ex.pid = pid
	s.mu.Lock()
	s.execs[ex.id] = ex
	s.mu.Unlock()
	if req.DeadlineMS > 0 {
		t := time.AfterFunc(time.Duration(req.DeadlineMS)*time.Millisecond, func() {
			ex.timedOut.Store(true)
			ex.kill()
		})
		go func() { <-ex.done; t.Stop() }()
	}
	go ex.await(exited)
	if ex.ring != nil {
		ex.pumpAll(ringSink{ex.ring})
	}
	return ex, nil
}

// stopInput ends the stdin feed of an exec that did not start: its
// goroutine would otherwise wait for input forever (one per refused exec,
// as many as a fork bomb makes the host retry).
func (ex *execState) stopInput() {
	if ex.stdin != nil {
		ex.stdin.stop()
	}
}

// await records how the command ended once its main process exits.
func (ex *execState) await(exited <-chan syscall.WaitStatus) {
	ws := <-exited
	e := keeperproto.Exit{Code: ws.ExitStatus()}
	if ws.Signaled() {
		e.Code = 128 + int(ws.Signal())
		e.Signal = signalName(ws.Signal())
		if ws.Signal() == syscall.SIGKILL {
			n := oomKillsAfter(ex.oomBefore)
			if n >= 0 && n > ex.oomBefore && !ex.killed.Load() {
				e.OOMKilled = true
			}
		}
	}
	e.Killed = ex.killed.Load()
	e.TimedOut = ex.timedOut.Load()
	if e.Killed {
		e.Code = keeperproto.KilledExitCode
	}
	// Whatever the main process wrote is in the pipes now; what background
	// descendants write later is not its output (the exec is over when its
	// main process is, as with docker exec).
	for _, o := range ex.outs {
		_ = o.f.SetReadDeadline(time.Now())
	}
	ex.pumps.Wait()
	ex.killsOver()
	if ex.stdin != nil {
		ex.stdin.stop()
	}
	if ex.tty != nil {
		ex.tty.Close()
	}
	ex.exit = e
	if ex.ring != nil {
		ex.ring.finish()
	}
	close(ex.done)
	ex.s.forgetEnded(ex)
}

// keptEnded is how many ended detached execs (ring and exit) the keeper
// keeps for Attach and ListExecs; the oldest ended goes first. Without a
// bound a long-lived sandbox would hold every one it ever ran.
const keptEnded = 64

// forgetEnded drops a non-detached exec once it ended, and the oldest
// ended detached ones beyond keptEnded.
func (s *server) forgetEnded(ex *execState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ex.detach {
		delete(s.execs, ex.id)
		return
	}
	s.ended = append(s.ended, ex.id)
	for len(s.ended) > keptEnded {
		delete(s.execs, s.ended[0])
		s.ended = s.ended[1:]
	}
}

func (ex *execState) ringSize() int64 {
	if ex.ring == nil {
		return 0
	}
	return ex.ring.size
}
