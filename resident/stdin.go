package resident

import (
	"context"

	"github.com/resident-dev/resident/protocol"
)

// releaseExecID ends an exec entry its request registered, even when the
// request failed before execute ran, so exec/stdin never waits on it.
func (s *session) releaseExecID(c *call) {
	if e := s.lookupExec(c.route.ExecID); e != nil && e.owner == c {
		e.finish()
	}
}

// execStdin writes to a running exec. Requests for one exec run in arrival
// order (their ordering key), so chunks reach the process as sent.
func execStdin(ctx context.Context, s *session, _ *call, p *protocol.ExecStdinParams) (protocol.Empty, error) {
	e, err := s.startedExec(ctx, p.ExecID)
	if err != nil {
		return protocol.Empty{}, err
	}
	// The write happens outside e.mu: a process that stops reading must not
	// block exec/kill, which needs the lock. Writes for one exec are already
	// serialised by its ordering key.
	e.mu.Lock()
	ended, stdin := e.ended, e.stdin
	e.mu.Unlock()
	if ended {
		return protocol.Empty{}, protocol.Errorf(protocol.KindConflict, "exec %q has ended", p.ExecID)
	}
	if stdin == nil {
		return protocol.Empty{}, invalid("exec %q was started without stdin, or its stdin is closed", p.ExecID)
	}
	if len(p.Data) > 0 {
		if _, err := stdin.Write(p.Data); err != nil {
			return protocol.Empty{}, protocol.Errorf(protocol.KindConflict, "exec %q stopped reading its stdin", p.ExecID)
		}
	}
	if p.EOF {
		e.mu.Lock()
		if e.stdin != nil {
			_ = e.stdin.Close()
			e.stdin = nil
		}
		e.mu.Unlock()
	}
	return protocol.Empty{}, nil
}

// execKill kills a running exec's process tree; the exec's own response
// reports killed: true. Killing an exec that has ended is a no-op.
func execKill(ctx context.Context, s *session, _ *call, p *protocol.ExecKillParams) (protocol.Empty, error) {
	e, err := s.startedExec(ctx, p.ExecID)
	if err != nil {
		return protocol.Empty{}, err
	}
	e.mu.Lock()
	kill := e.kill
	e.mu.Unlock()
	if kill != nil {
		kill(errExecKilled)
	}
	return protocol.Empty{}, nil
}

func (s *session) startedExec(ctx context.Context, id string) (*runningExec, error) {
	if err := checkID("exec_id", id); err != nil {
		return nil, err
	}
	e := s.lookupExec(id)
	if e == nil {
		return nil, protocol.Errorf(protocol.KindNotFound, "no exec %q in this session", id)
	}
	select {
	case <-e.started:
		return e, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
