package resident

import (
	"context"

	"github.com/resident-dev/resident/protocol"
)

// execStdin writes to a running exec. Requests for one exec run in arrival
// order (their ordering key), so chunks reach the process as sent.
func execStdin(ctx context.Context, s *session, c *call, p *protocol.ExecStdinParams) (protocol.Empty, error) {
	e, err := startedExec(ctx, c, p.ExecID)
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
// reports killed: true. Killing an exec that has ended, but was still
// registered when the kill was read, is a no-op.
func execKill(ctx context.Context, s *session, c *call, p *protocol.ExecKillParams) (protocol.Empty, error) {
	if c.target == nil && p.SandboxID != "" {
		return protocol.Empty{}, s.killDetached(ctx, p)
	}
	e, err := startedExec(ctx, c, p.ExecID)
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

// execResize resizes the terminal of an exec started with tty.
func execResize(ctx context.Context, _ *session, c *call, p *protocol.ExecResizeParams) (protocol.Empty, error) {
	e, err := startedExec(ctx, c, p.ExecID)
	if err != nil {
		return protocol.Empty{}, err
	}
	if p.Rows == 0 || p.Cols == 0 {
		return protocol.Empty{}, invalid("rows and cols must be at least 1")
	}
	e.mu.Lock()
	ended, resize := e.ended, e.resize
	e.mu.Unlock()
	switch {
	case ended:
		return protocol.Empty{}, protocol.Errorf(protocol.KindConflict, "exec %q has ended", p.ExecID)
	case resize == nil:
		return protocol.Empty{}, invalid("exec %q was started without a tty", p.ExecID)
	}
	if err := resize.Resize(protocol.WindowSize{Rows: p.Rows, Cols: p.Cols}); err != nil {
		return protocol.Empty{}, protocol.Errorf(protocol.KindConflict, "exec %q: resizing its terminal: %w", p.ExecID, err)
	}
	return protocol.Empty{}, nil
}

// startedExec waits for the start of the exec c named when it was read.
func startedExec(ctx context.Context, c *call, id string) (*runningExec, error) {
	if err := checkID("exec_id", id); err != nil {
		return nil, err
	}
	e := c.target
	if e == nil || e.id != id {
		return nil, protocol.Errorf(protocol.KindNotFound, "no exec %q is running in this session", id)
	}
	select {
	case <-e.started:
		return e, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
