package resident

import (
	"context"
	"errors"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

var (
	errExecTimeout = errors.New("exec timed out")
	errExecKilled  = errors.New("exec killed by the host")
)

// runningExec is an exec id's entry while its sandbox/exec is in flight:
// registered on the read loop (so exec/stdin pipelined right behind
// sandbox/exec finds it), made usable once the process starts, and dropped
// just before the exec answers, so a session that runs a million execs holds
// no record of the finished ones. Requests read while it was registered
// keep it (call.target), so a kill that races the end is a harmless no-op.
// It never refers to the request that registered it: that request's params
// go when it answers.
type runningExec struct {
	id      string
	started chan struct{} // closed once the process runs or failed to start
	// stdinRefused is set on the read loop when the budget refused stdin
	// for this exec; its later stdin is refused too.
	stdinRefused atomic.Bool
	mu           sync.Mutex
	stdin        io.WriteCloser // nil: stdin not requested, or already closed
	kill         context.CancelCauseFunc
	resize       provider.Resizer // nil: not started with a tty
	ended        bool
}

// preRegisterExec runs on the read loop with s.mu held.
func (s *session) preRegisterExec(c *call) {
	if c.route.ExecID == "" {
		return
	}
	if _, dup := s.execs[c.route.ExecID]; dup {
		return // execute sees it has no entry and refuses
	}
	c.exec = &runningExec{id: c.route.ExecID, started: make(chan struct{})}
	s.execs[c.route.ExecID] = c.exec
}

// releaseExecID ends and drops the entry a sandbox/exec registered, even
// when the request failed before execute ran, so exec/stdin never waits on
// it. It runs before the exec answers: once the host has the answer, the
// id is free again.
func (s *session) releaseExecID(c *call) {
	e := c.exec
	if e == nil {
		return
	}
	e.finish()
	s.mu.Lock()
	if s.execs[e.id] == e {
		delete(s.execs, e.id)
	}
	s.mu.Unlock()
}

func execute(ctx context.Context, s *session, c *call, p *protocol.ExecParams) (*protocol.ExecResult, error) {
	if err := checkID("exec_id", p.ExecID); err != nil {
		return nil, err
	}
	entry := c.exec
	if entry == nil || entry.id != p.ExecID {
		return nil, protocol.Errorf(protocol.KindConflict, "exec_id %q is in use by an exec that has not answered yet", p.ExecID)
	}
	defer entry.finish()
	timeout, err := s.execTimeout(p.TimeoutS)
	if err != nil {
		return nil, err
	}
	if err := s.validateExec(p); err != nil {
		return nil, err
	}
	if err := s.checkOwnedBeforeExec(ctx, p.SandboxID); err != nil {
		return nil, err
	}
	if err := s.takeExecSlot(); err != nil {
		return nil, err
	}
	defer s.releaseExecSlot()
	if p.Detach {
		return startDetached(ctx, s, entry, p)
	}

	// The timeout counts from here, but it never fails the start: a start
	// slower than timeout_s (an engine busy with other work) would
	// otherwise answer with a timeout error where the host was promised a
	// result. The command starts whatever the time, the sandbox's keeper
	// holds the deadline (it kills at once one already past), and the
	// timer below kills through execCtx on providers without a keeper.
	execCtx, kill := context.WithCancelCause(ctx)
	defer kill(nil)
	start := time.Now()
	deadline := start.Add(timeout)
	proc, err := s.prov.Exec(execCtx, p.SandboxID, provider.ExecRequest{
		Argv: p.Argv, Env: p.Env, Cwd: p.Cwd, Stdin: p.Stdin, Exclusive: p.Exclusive, User: p.User, TTY: p.TTY,
		Deadline: deadline,
	})
	if err != nil {
		return nil, err
	}
	timedOut := make(chan struct{})
	timer := time.AfterFunc(time.Until(deadline), func() {
		kill(errExecTimeout)
		close(timedOut)
	})
	defer timer.Stop()
	resize, _ := proc.(provider.Resizer)
	if p.TTY == nil {
		resize = nil
	}
	entry.start(proc.Stdin(), kill, resize)
	s.watch.execStarted(p.SandboxID, p.ExecID)

	execID := s.scrub.ScrubString(p.ExecID)
	stdout := s.startPump(execID, protocol.StreamStdout, proc.Stdout())
	stderr := s.startPump(execID, protocol.StreamStderr, proc.Stderr())
	status, waitErr := proc.Wait()
	if !timer.Stop() {
		// It fired, maybe only just, as the keeper's kill at the same
		// deadline ended the process: its cause is the answer's.
		<-timedOut
	}
	out, errOut := <-stdout, <-stderr

	if ctx.Err() != nil { // the request itself was cancelled, not the exec
		return nil, s.contextError(ctx, ctx.Err())
	}
	if waitErr != nil {
		return nil, waitErr
	}
	// Killed: by the host's exec/kill, or by the provider to make room for
	// an exclusive exec in the same sandbox.
	cause := context.Cause(execCtx)
	s.watch.execEnded(p.SandboxID, p.ExecID, status.Code)
	return &protocol.ExecResult{
		ExitCode:      status.Code,
		Signal:        status.Signal,
		OOMKilled:     status.OOMKilled,
		TimedOut:      errors.Is(cause, errExecTimeout),
		Killed:        errors.Is(cause, errExecKilled) || status.Killed,
		StdoutBytes:   out.total,
		StderrBytes:   errOut.total,
		StdoutDropped: out.dropped,
		StderrDropped: errOut.dropped,
		DurationMS:    time.Since(start).Milliseconds(),
	}, nil
}

func (s *session) execTimeout(seconds float64) (time.Duration, error) {
	limits := s.opts.Limits
	switch {
	case seconds == 0:
		return time.Duration(limits.DefaultExecTimeoutS) * time.Second, nil
	case seconds < 0 || math.IsNaN(seconds) || seconds > float64(limits.MaxExecTimeoutS):
		return 0, invalid("timeout_s must be between 0 (the default, %ds) and %d", limits.DefaultExecTimeoutS, limits.MaxExecTimeoutS)
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

func (s *session) validateExec(p *protocol.ExecParams) error {
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return err
	}
	if err := checkArgv(p.Argv); err != nil {
		return err
	}
	if err := checkPath("cwd", p.Cwd); err != nil {
		return err
	}
	info := s.prov.Info()
	if p.Stdin && !info.Capabilities.Stdin {
		return invalid("provider %s cannot stream stdin", info.Name)
	}
	if err := checkUser("user", p.User); err != nil {
		return err
	}
	if p.User != "" && !info.Capabilities.ExecUser {
		return invalid("provider %s cannot run a command as another user (capabilities.exec_user is false)", info.Name)
	}
	if p.TTY != nil {
		if !info.Capabilities.TTY {
			return invalid("provider %s cannot run a command on a terminal (capabilities.tty is false)", info.Name)
		}
		if p.TTY.Rows == 0 || p.TTY.Cols == 0 {
			return invalid("tty.rows and tty.cols must be at least 1")
		}
	}
	return checkEnv("env", p.Env, s.prov.Secrets().EnvPrefixes)
}

func (s *session) takeExecSlot() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running >= s.opts.Limits.MaxConcurrentExecs {
		return protocol.Errorf(protocol.KindQuota, "%d execs are already running, the most this resident runs at once; retry when one ends", s.running)
	}
	s.running++
	return nil
}

func (s *session) releaseExecSlot() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
}

func (e *runningExec) start(stdin io.WriteCloser, kill context.CancelCauseFunc, resize provider.Resizer) {
	e.mu.Lock()
	e.stdin, e.kill, e.resize = stdin, kill, resize
	e.mu.Unlock()
	close(e.started)
}

// finish marks the exec over; a start that never happened is released too.
func (e *runningExec) finish() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended = true
	if e.stdin != nil {
		_ = e.stdin.Close()
		e.stdin = nil
	}
	select {
	case <-e.started:
	default:
		close(e.started)
	}
}

func (s *session) execLog(execID string) *zap.Logger {
	return s.log.With(zap.String("exec_id", execID))
}
