package resident

import (
	"context"
	"errors"
	"io"
	"math"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

var (
	errExecTimeout = errors.New("exec timed out")
	errExecKilled  = errors.New("exec killed by the host")
)

// runningExec is an exec id's entry for the session's life: registered on the
// read loop (so exec/stdin pipelined right behind sandbox/exec finds it), made
// usable once the process starts, and kept after it ends so the id is never
// reused and a late kill is a harmless no-op.
type runningExec struct {
	owner   *call         // the sandbox/exec request that registered the id
	started chan struct{} // closed once the process runs or failed to start
	mu      sync.Mutex
	stdin   io.WriteCloser // nil: stdin not requested, or already closed
	kill    context.CancelCauseFunc
	ended   bool
}

// preRegisterExec runs on the read loop with s.mu held.
func (s *session) preRegisterExec(c *call) {
	if c.route.ExecID == "" {
		return
	}
	if _, dup := s.execs[c.route.ExecID]; dup {
		return // execute sees it belongs to another call and refuses
	}
	s.execs[c.route.ExecID] = &runningExec{owner: c, started: make(chan struct{})}
}

func (s *session) lookupExec(id string) *runningExec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.execs[id]
}

func execute(ctx context.Context, s *session, c *call, p *protocol.ExecParams) (*protocol.ExecResult, error) {
	if err := checkID("exec_id", p.ExecID); err != nil {
		return nil, err
	}
	entry := s.lookupExec(p.ExecID)
	if entry == nil || entry.owner != c {
		return nil, protocol.Errorf(protocol.KindConflict, "exec_id %q was already used in this session", p.ExecID)
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

	execCtx, kill := context.WithCancelCause(ctx)
	defer kill(nil)
	execCtx, stopTimer := context.WithTimeoutCause(execCtx, timeout, errExecTimeout)
	defer stopTimer()

	start := time.Now()
	proc, err := s.prov.Exec(execCtx, p.SandboxID, provider.ExecRequest{Argv: p.Argv, Env: p.Env, Cwd: p.Cwd, Stdin: p.Stdin, Exclusive: p.Exclusive})
	if err != nil {
		return nil, err
	}
	entry.start(proc.Stdin(), kill)

	execID := s.scrub.ScrubString(p.ExecID)
	stdout := s.startPump(execID, protocol.StreamStdout, proc.Stdout())
	stderr := s.startPump(execID, protocol.StreamStderr, proc.Stderr())
	status, waitErr := proc.Wait()
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
	if p.Cwd != "" && !printable(p.Cwd) {
		return invalid("cwd must be printable")
	}
	if p.Stdin && !s.prov.Info().Capabilities.Stdin {
		return invalid("provider %s cannot stream stdin", s.prov.Info().Name)
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

func (e *runningExec) start(stdin io.WriteCloser, kill context.CancelCauseFunc) {
	e.mu.Lock()
	e.stdin, e.kill = stdin, kill
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
