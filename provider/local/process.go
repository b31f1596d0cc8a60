//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// drainGrace is how long output may keep arriving after the main process
// exits. A background child that inherited stdout can hold the pipe open for
// ever; completion is the main process's exit, so after this grace the
// readers take what is buffered and end.
const drainGrace = 100 * time.Millisecond

// process is one exec. Its stdio are os.Pipe ends handed to the child as
// files, so no goroutine copies them and nothing waits for a pipe's EOF.
type process struct {
	cmd    *exec.Cmd
	stdout *outputReader
	stderr *outputReader
	stdin  *stdinWriter  // nil unless the host streams stdin
	waited chan struct{} // closed once the main process is reaped

	mu            sync.Mutex // orders killTree against the reap of the main process
	exited        bool       // main process is a zombie or gone: its pid is no longer ours to signal
	killRequested bool       // killTree ran while the main process ran

	status provider.ExitStatus
	err    error
}

var _ provider.Process = (*process)(nil)

// startOptions are what start needs of the request besides the command.
type startOptions struct {
	stdin   bool     // the host streams stdin
	cgroups []string // the sandbox's cgroups (its limits), entered at fork
}

func (p *Provider) start(ctx context.Context, sandboxID string, cmd *exec.Cmd, opts startOptions) (*process, error) {
	pr := &process{cmd: cmd, waited: make(chan struct{})}
	var childEnds []*os.File
	closeAll := func(files []*os.File) {
		for _, f := range files {
			_ = f.Close()
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll([]*os.File{outR, outW})
		return nil, err
	}
	parentEnds := []*os.File{outR, errR}
	childEnds = append(childEnds, outW, errW)
	cmd.Stdout, cmd.Stderr = outW, errW // cmd.Stdin nil: the child reads /dev/null
	if opts.stdin {
		inR, inW, err := os.Pipe()
		if err != nil {
			closeAll(append(parentEnds, childEnds...))
			return nil, err
		}
		cmd.Stdin = inR
		childEnds = append(childEnds, inR)
		parentEnds = append(parentEnds, inW)
		pr.stdin = &stdinWriter{f: inW}
	}

	// Start under p.mu, after checking the sandbox still exists: remove
	// renames it away under the same lock, so every process it must kill
	// is registered by then.
	p.mu.Lock()
	if _, err := os.Lstat(p.sandboxDir(sandboxID)); err != nil {
		p.mu.Unlock()
		closeAll(append(parentEnds, childEnds...))
		return nil, notFound(sandboxID)
	}
	if p.ended[sandboxID] { // expired since the caller's lookup
		p.mu.Unlock()
		closeAll(append(parentEnds, childEnds...))
		return nil, protocol.Errorf(protocol.KindConflict, "sandbox %s expired (its lifetime_s ended); terminate it", sandboxID)
	}
	if err := startInCgroups(opts.cgroups, cmd); err != nil {
		p.mu.Unlock()
		closeAll(append(parentEnds, childEnds...))
		if errors.Is(err, syscall.ENOEXEC) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOENT) {
			return nil, protocol.Errorf(protocol.KindInvalidRequest, "exec %q: %w", cmd.Args[0], err)
		}
		return nil, fmt.Errorf("exec %q: %w", cmd.Args[0], err)
	}
	pid := cmd.Process.Pid
	if p.running[sandboxID] == nil {
		p.running[sandboxID] = map[*process]struct{}{}
	}
	if p.groups[sandboxID] == nil {
		p.groups[sandboxID] = map[int]uint64{}
	}
	p.running[sandboxID][pr] = struct{}{}
	p.groups[sandboxID][pid] = startTime(pid)
	p.mu.Unlock()
	closeAll(childEnds) // the child has its copies; ours would hide EOF

	pr.stdout = newOutputReader(outR)
	pr.stderr = newOutputReader(errR)
	oomBefore := oomKills(opts.cgroups)
	stopKill := context.AfterFunc(ctx, pr.killTree)
	go func() {
		waitExit(pid)
		pr.mu.Lock()
		pr.exited = true
		pr.mu.Unlock()
		stopKill()
		pr.status, pr.err = exitStatus(cmd.Wait())
		// The limit is the sandbox's, as a container's is: a kill of it
		// while this exec ran, and this exec ended by SIGKILL, is this one.
		pr.status.OOMKilled = pr.status.Signal == "SIGKILL" && oomBefore >= 0 && oomKills(opts.cgroups) > oomBefore
		deadline := time.Now().Add(drainGrace)
		_ = outR.SetReadDeadline(deadline)
		_ = errR.SetReadDeadline(deadline)
		if pr.stdin != nil {
			_ = pr.stdin.Close()
		}
		p.mu.Lock()
		delete(p.running[sandboxID], pr)
		if syscall.Kill(-pid, 0) == syscall.ESRCH {
			delete(p.groups[sandboxID], pid) // nothing left in the group to reap later
		}
		if len(p.running[sandboxID]) == 0 && len(p.groups[sandboxID]) == 0 {
			delete(p.running, sandboxID)
			delete(p.groups, sandboxID)
		}
		p.mu.Unlock()
		close(pr.waited)
	}()
	return pr, nil
}

func (pr *process) Stdout() io.Reader { return pr.stdout }
func (pr *process) Stderr() io.Reader { return pr.stderr }

func (pr *process) Stdin() io.WriteCloser {
	if pr.stdin == nil {
		return nil // a nil *stdinWriter in the interface would not be nil
	}
	return pr.stdin
}

// Wait returns once the main process is reaped and both streams reached
// their end, or the drain grace (twice over, for slow readers) ran out.
func (pr *process) Wait() (provider.ExitStatus, error) {
	<-pr.waited
	timer := time.NewTimer(2 * drainGrace)
	defer timer.Stop()
	for _, r := range []*outputReader{pr.stdout, pr.stderr} {
		select {
		case <-r.done:
		case <-timer.C:
			return pr.status, pr.err
		}
	}
	return pr.status, pr.err
}

// killTree kills the main process and everything the exec started, but
// only while the main process has not exited: a background service of an
// exec that ended by itself keeps running (Terminate stops it). That is
// the main process's group and descendants found through /proc, which a
// process can leave by re-parenting itself: unisolated, local promises
// less (see the package doc).
func (pr *process) killTree() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.exited {
		return
	}
	pr.killRequested = true
	pid := pr.cmd.Process.Pid
	killWhere(func(pi procInfo) bool { return pi.pid == pid || pi.pgid == pid })
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// exitStatus reads how the main process ended; err is cmd.Wait's.
func exitStatus(err error) (provider.ExitStatus, error) {
	var exitErr *exec.ExitError
	if err == nil {
		return provider.ExitStatus{}, nil
	}
	if !errors.As(err, &exitErr) {
		return provider.ExitStatus{}, err
	}
	ws, ok := exitErr.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return provider.ExitStatus{Code: 128 + int(ws.Signal()), Signal: signalName(ws.Signal())}, nil
	}
	return provider.ExitStatus{Code: exitErr.ExitCode()}, nil
}
