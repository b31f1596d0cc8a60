package resident

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// startDetached runs a sandbox/exec with detach: the provider starts the
// exec under the sandbox's supervisor, and this session follows it as
// exec/attach from offset 0 would, so the host sees no difference from an
// ordinary exec until it goes away: then the exec goes on.
func startDetached(ctx context.Context, s *session, entry *runningExec, p *protocol.ExecParams) (*protocol.ExecResult, error) {
	if err := s.startDetachedExec(ctx, p); err != nil {
		return nil, err
	}
	return s.follow(ctx, entry, p.SandboxID, p.ExecID, 0)
}

// startDetachedExec starts a validated detached exec. A cancel that comes
// during the start does not cut it in two: the exec either runs or was
// refused, and the host learns which from list_execs if not from here.
func (s *session) startDetachedExec(ctx context.Context, p *protocol.ExecParams) error {
	if s.detach == nil {
		return invalid("provider %s cannot detach execs (capability detach)", s.prov.Info().Name)
	}
	req := provider.ExecRequest{Argv: p.Argv, Env: p.Env, Cwd: p.Cwd, Stdin: p.Stdin, Exclusive: p.Exclusive, Detach: true, ID: p.ExecID,
		User: p.User, TTY: p.TTY}
	if p.TimeoutS != 0 {
		timeout, err := s.execTimeout(p.TimeoutS)
		if err != nil {
			return err
		}
		req.Deadline = time.Now().Add(timeout)
	}
	if err := s.detach.StartDetached(context.WithoutCancel(ctx), p.SandboxID, req); err != nil {
		return err
	}
	s.execLog(p.ExecID).Debug("detached exec started", zap.String("sandbox", p.SandboxID))
	return nil
}

// startExec is exec/start: a detached exec that answers once it runs, for
// a host that follows it later (or never), as a background job.
func startExec(ctx context.Context, s *session, _ *call, p *protocol.ExecParams) (*protocol.ExecStartResult, error) {
	if err := checkID("exec_id", p.ExecID); err != nil {
		return nil, err
	}
	if err := s.validateExec(p); err != nil {
		return nil, err
	}
	if err := s.checkOwnedBeforeExec(ctx, p.SandboxID); err != nil {
		return nil, err
	}
	p.Detach = true
	if err := s.startDetachedExec(ctx, p); err != nil {
		return nil, err
	}
	return &protocol.ExecStartResult{ExecID: p.ExecID, StartedAt: time.Now().UTC().Format(time.RFC3339Nano)}, nil
}

// attachExec is exec/attach: follow a detached exec from offset.
func attachExec(ctx context.Context, s *session, c *call, p *protocol.ExecAttachParams) (*protocol.ExecResult, error) {
	if err := checkID("exec_id", p.ExecID); err != nil {
		return nil, err
	}
	entry := c.exec
	if entry == nil || entry.id != p.ExecID {
		return nil, protocol.Errorf(protocol.KindConflict, "exec_id %q is in use by an exec that has not answered yet", p.ExecID)
	}
	defer entry.finish()
	if s.detach == nil {
		return nil, invalid("provider %s cannot detach execs (capability detach)", s.prov.Info().Name)
	}
	if p.Offset < 0 {
		return nil, invalid("offset must not be negative")
	}
	sandboxID := p.SandboxID
	if sandboxID == "" {
		found, err := s.findDetached(ctx, p.ExecID)
		if err != nil {
			return nil, err
		}
		sandboxID = found
	} else if err := s.checkOwnedBeforeExec(ctx, sandboxID); err != nil {
		return nil, err
	}
	if err := s.takeExecSlot(); err != nil {
		return nil, err
	}
	defer s.releaseExecSlot()
	return s.follow(ctx, entry, sandboxID, p.ExecID, p.Offset)
}

// findDetached looks for a detached exec in every running sandbox the
// install owns, for an exec/attach that does not name its sandbox.
func (s *session) findDetached(ctx context.Context, execID string) (string, error) {
	owned, err := s.prov.ListOwned(ctx, s.owner)
	if err != nil {
		return "", err
	}
	for _, sb := range owned {
		if sb.State != protocol.StateRunning {
			continue
		}
		execs, err := s.detach.ListExecs(ctx, sb.SandboxID)
		if err != nil {
			if k := protocol.KindOf(err); k == protocol.KindNotFound || k == protocol.KindConflict {
				continue // gone or stopped since the list
			}
			return "", err
		}
		for _, e := range execs {
			if e.ExecID == execID {
				return sb.SandboxID, nil
			}
		}
	}
	return "", protocol.Errorf(protocol.KindNotFound, "no detached exec %q in the sandboxes this install owns", execID)
}

// follow streams a detached exec to the host until it ends (the answer)
// or the request ends (the exec goes on: cancelling detaches).
func (s *session) follow(ctx context.Context, entry *runningExec, sandboxID, execID string, offset int64) (*protocol.ExecResult, error) {
	start := time.Now()
	att, err := s.detach.Attach(ctx, sandboxID, execID, offset)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = att.Close() })
	defer stop()
	defer att.Close()

	var killedByHost atomic.Bool
	entry.start(att.Stdin(), func(cause error) {
		if !errors.Is(cause, errExecKilled) {
			return
		}
		killedByHost.Store(true)
		go func() {
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := s.detach.KillExec(kctx, sandboxID, execID); err != nil {
				s.execLog(execID).Warn("killing a detached exec failed", zap.Error(err))
			}
		}()
	}, resizerOf(att))
	info := att.Info()
	pump := newDetachedPump(s, s.scrub.ScrubString(execID), info.Offset)
	err = pump.run(att)
	if ctx.Err() != nil {
		return nil, s.contextError(ctx, ctx.Err())
	}
	if err != nil {
		return nil, protocol.Errorf(protocol.KindTransient, "lost the channel to sandbox %s while following exec %q (it goes on; attach again): %v", sandboxID, execID, err)
	}
	status, _ := att.Exit()
	next := pump.resume
	byHost := killedByHost.Load()
	return &protocol.ExecResult{
		ExitCode:      status.Code,
		Signal:        status.Signal,
		OOMKilled:     status.OOMKilled,
		TimedOut:      status.TimedOut,
		Killed:        byHost || status.Killed,
		StdoutBytes:   pump.streams[0].total,
		StderrBytes:   pump.streams[1].total,
		StdoutDropped: pump.streams[0].dropped,
		StderrDropped: pump.streams[1].dropped,
		DurationMS:    time.Since(start).Milliseconds(),
		NextOffset:    &next,
		OutputLost:    info.Lost,
	}, nil
}

// listExecs is sandbox/list_execs.
func listExecs(ctx context.Context, s *session, _ *call, p *protocol.SandboxIDParams) (*protocol.ListExecsResult, error) {
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return nil, err
	}
	if s.detach == nil {
		return nil, invalid("provider %s cannot detach execs (capability detach)", s.prov.Info().Name)
	}
	if err := s.checkOwned(ctx, p.SandboxID); err != nil {
		return nil, err
	}
	execs, err := s.detach.ListExecs(ctx, p.SandboxID)
	if err != nil {
		return nil, err
	}
	for i := range execs {
		// The host's own words come back, but a command line may hold a
		// secret the host passed in argv.
		for j, a := range execs[i].Argv {
			execs[i].Argv[j] = s.scrub.ScrubString(a)
		}
		execs[i].ExecID = s.scrub.ScrubString(execs[i].ExecID)
	}
	if execs == nil {
		execs = []protocol.ExecInfo{}
	}
	return &protocol.ListExecsResult{Execs: execs}, nil
}

// killDetached is exec/kill of a detached exec this session does not
// follow: named by its sandbox.
func (s *session) killDetached(ctx context.Context, p *protocol.ExecKillParams) error {
	if s.detach == nil {
		return protocol.Errorf(protocol.KindNotFound, "no exec %q is running in this session", p.ExecID)
	}
	if err := checkID("sandbox_id", p.SandboxID); err != nil {
		return err
	}
	if err := s.checkOwned(ctx, p.SandboxID); err != nil {
		return err
	}
	return s.detach.KillExec(ctx, p.SandboxID, p.ExecID)
}

// resizerOf is the attachment's terminal, when it follows a tty exec.
func resizerOf(att provider.Attachment) provider.Resizer {
	if r, ok := att.(provider.Resizer); ok {
		return r
	}
	return nil
}
